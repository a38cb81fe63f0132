"""Worker entry points for the pool tests (spawned workers import them by name)."""

import os
import signal
import time


def echo(conn, prefix):
    conn.send("ready")
    while (item := conn.recv()) is not None:
        if item == "crash":
            os.kill(os.getpid(), signal.SIGSEGV)
        if item == "hang":
            time.sleep(60)
        answer = {"echo": f"{prefix}{item}", "pid": os.getpid()}
        if item == "spoil":
            answer["restart"] = "the device is spoilt"
        conn.send(answer)
        if "restart" in answer:
            break


def never_ready(conn):
    os._exit(3)
