"""Worker entry points for the pool tests (spawned workers import them by name)."""

import os
import signal
import time


def echo(conn, slot, prefix):
    conn.send(("ready", {"slot": slot}))
    while (item := conn.recv()) is not None:
        if item == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if item == "exit":  # answers, then dies while idle
            conn.send({"echo": item, "pid": os.getpid(), "slot": slot})
            os._exit(0)
        if item == "hang":
            time.sleep(60)
        if item.startswith("sleep:"):  # sleep:<seconds>[:<tag>]
            time.sleep(float(item.split(":")[1]))
        answer = {"echo": f"{prefix}{item}", "pid": os.getpid(), "slot": slot}
        if item == "spoil":
            answer["restart"] = "the device is spoilt"
        conn.send(answer)
        if "restart" in answer:
            break


def never_ready(conn, slot):
    os._exit(3)
