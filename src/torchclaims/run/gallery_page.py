"""A script's gallery page as the build writes it: the script's own blocks, and
only escaped output from its run.

The script runs in the same interpreter as sphinx-gallery, and writes its own
folder, so everything its process stages (the page, its notebook, its ``.py``
copy) is the script's to forge: it can patch sphinx-gallery or rewrite the
files before it ends. The build takes from the staged page only data: the
output each code block printed, shown as a literal block whatever it holds,
the script's PNG figures, each by its name, and its running time as a number.
The rest it writes itself: sphinx-gallery's page of the script with nothing
executed (``plot_gallery`` off), with that output put back after each block.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
import textwrap
from pathlib import Path

from sphinx_gallery.gen_rst import CODE_OUTPUT, TIMING_CONTENT, generate_file_rst
from sphinx_gallery.scrapers import figure_rst
from sphinx_gallery.utils import get_md5sum

from .. import limits

_MARKER = re.compile(r"^\.\. GENERATED FROM PYTHON SOURCE LINES \d+-\d+$", re.MULTILINE)
_FOOTER = re.compile(r"^\.\. _sphx_glr_download_", re.MULTILINE)
_TIMING = re.compile(r"^\.\. rst-class:: sphx-glr-timing$", re.MULTILINE)
_SECONDS = re.compile(r"\*\*Total running time of the script:\*\* \((\d{1,6}) minutes (\d{1,2}\.\d{3}) seconds\)")
_PNG = b"\x89PNG\r\n\x1a\n"
_WRAPPER = re.compile(
    r"\.\. rst-class:: sphx-glr-(script-out|horizontal)|\s*\*|\||\s+:(srcset|class): .*"
)  # sphinx-gallery's, around output
WITHHELD = "The page the script's process wrote does not match the script, so its output is not shown."
TOO_LARGE = "The page the script's process wrote passes {:,} bytes (its output), so its output is not shown."


def write_page(fname: str, src_dir: str, target_dir: Path, gallery_conf: dict, staged_dir: Path, scratch: Path) -> None:
    """Write the page of ``fname`` (a script in ``src_dir``) and its files into
    ``target_dir``: sphinx-gallery's own files for the script, made here
    without running it, and from ``staged_dir`` (what the script's process
    wrote) only its output as text, its figures and its running time."""
    relative = target_dir.relative_to(gallery_conf["src_dir"])
    own_dir = scratch / relative
    own_dir.mkdir(parents=True, exist_ok=True)
    stem = Path(fname).stem
    thumb = Path("images", "thumb", f"sphx_glr_{stem}_thumb.png")
    if _is_png(staged_dir / thumb):
        # The script's own thumbnail, in place before sphinx-gallery writes the page:
        # it keeps a thumbnail it finds, instead of scaling its default image again.
        (own_dir / thumb).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(staged_dir / thumb, own_dir / thumb)
    conf = dict(gallery_conf, src_dir=str(scratch), plot_gallery=False, min_reported_time=math.inf)
    generate_file_rst(fname, str(own_dir), src_dir, conf)
    # The names sphinx-gallery found in the code, to link each to its documentation:
    # the site documents no Python object and loads no inventory (it builds offline),
    # and with the file there every code block is tokenized again in Sphinx's main process.
    (own_dir / f"{stem}.codeobj.json").unlink(missing_ok=True)
    page = own_dir / fname
    staged_rst = staged_dir / Path(fname).with_suffix(".rst").name
    figures = _figures(staged_dir, stem)
    own_rst = page.with_suffix(".rst")
    own, staged = own_rst.read_text(encoding="utf-8"), _read(staged_rst, limits.LIMITS.staged_page_bytes)
    if staged is None:  # not read: it would be parsed whole, here and then by Sphinx
        page_text = _before_footer(own, f"\n.. note:: {TOO_LARGE.format(limits.LIMITS.staged_page_bytes)}\n\n")
    else:
        page_text = merged(own, staged, stem, figures, own_dir / "images", scratch)
    own_rst.write_text(page_text, encoding="utf-8")
    Path(f"{page}.md5").write_text(get_md5sum(page, mode="t"))
    cost = _cost(staged_dir / f"{stem}.cost.json")
    if cost is not None:
        (own_dir / f"{stem}.cost.json").write_text(json.dumps({"time": cost[0], "memory": cost[1]}))
    for path in [p for p in own_dir.rglob("*") if p.is_file()]:
        destination = target_dir / path.relative_to(own_dir)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, destination)
    for name in figures:
        shutil.move(staged_dir / "images" / name, target_dir / "images" / name)


def merged(own: str, staged: str, stem: str, figures: list[str], image_dir: Path, sources_dir: Path) -> str:
    """``own`` (the page of the script, not run) with the output of each code
    block taken from ``staged`` as data. A staged page whose blocks are not
    the script's own gets a note instead of any output."""
    own_parts, staged_parts = _blocks(own), _blocks(staged)
    if len(own_parts) != len(staged_parts):
        return _before_footer(own, f"\n.. note:: {WITHHELD}\n\n")
    pieces = []
    for own_part, staged_part in zip(own_parts, staged_parts, strict=True):
        # A block's part: its line marker (none before the first), then its text or
        # code; sphinx-gallery puts a code block's output after it, or before it
        # in a script of one code block.
        marker = own_part[: own_part.find("\n") + 1] if _MARKER.match(own_part) else ""
        body = own_part[len(marker) :].rstrip("\n")
        at = staged_part.find(body, len(marker)) if staged_part.startswith(marker) and body else -1
        if at < 0:
            return _before_footer(own, f"\n.. note:: {WITHHELD}\n\n")
        before, after = (
            _output(r, stem, figures, image_dir, sources_dir)
            for r in (staged_part[len(marker) : at], staged_part[at + len(body) :])
        )
        pieces.append(
            marker + (f"{before}\n\n|\n\n" if before else "") + body + after + own_part[len(marker) + len(body) :]
        )
    return _before_footer("".join(pieces) + own[len("".join(own_parts)) :], _timing(staged))


def _blocks(page: str) -> list[str]:
    """The page up to its footer (timing and downloads), cut at each block's line marker."""
    end = _TIMING.search(page) or _FOOTER.search(page)
    body = page[: end.start()] if end else page
    starts = [0, *(m.start() for m in _MARKER.finditer(body)), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(starts)]


def _output(region: str, stem: str, figures: list[str], image_dir: Path, sources_dir: Path) -> str:
    """What a block printed and drew, from its staged region: each image of
    this script's that exists, and every other line as literal text ("" for none)."""
    if not region.strip():
        return ""
    shown, text, alt = [], [], ""
    image = re.compile(rf"\s*\.\. image(-sg)?:: /\S+/images/(sphx_glr_{re.escape(stem)}_\d{{3}}\.png)\s*")
    literal = False
    for line in region.splitlines():
        literal = literal and (
            not line.strip() or line.startswith("    ")
        )  # a literal block ends where its indentation does
        found = image.fullmatch(line)
        if found:
            if found.group(2) in figures and found.group(2) not in shown:
                shown.append(found.group(2))
            continue
        if re.fullmatch(r"\s+:alt: .*", line):
            alt = alt or line.strip()[len(":alt: ") :]
            continue
        if line.strip() == ".. code-block:: none":
            literal = True
            continue
        if _WRAPPER.fullmatch(line) and not literal:
            continue
        text.append(line[4:] if literal and line.startswith("    ") else line)
    images = figure_rst([image_dir / name for name in shown], str(sources_dir), alt) if shown else ""
    body = "\n".join(text).strip("\n").rstrip()
    printed = (
        CODE_OUTPUT.format(textwrap.indent(body, " " * 4)) if body else ""
    )  # every line that holds text indented: literal
    return f"\n{images}\n\n{printed}\n\n"


def _timing(staged: str) -> str:
    found = _SECONDS.search(staged)
    return TIMING_CONTENT.format(int(found.group(1)), float(found.group(2))) if found else ""


def _before_footer(page: str, insert: str) -> str:
    end = _FOOTER.search(page)
    return page[: end.start()] + insert + page[end.start() :] if end else page + insert


def _figures(staged_dir: Path, stem: str) -> list[str]:
    """The script's figures the staged folder holds: PNG files named for it."""
    folder = staged_dir / "images"
    names = sorted(p.name for p in folder.glob(f"sphx_glr_{stem}_*.png")) if folder.is_dir() else []
    return [n for n in names if re.fullmatch(rf"sphx_glr_{re.escape(stem)}_\d{{3}}\.png", n) and _is_png(folder / n)]


def _regular_file(path: Path) -> bool:
    """A staged file is read only when it is a regular file, not a link: checked before
    it is opened, as opening a FIFO the script left there would wait for a writer forever."""
    return not path.is_symlink() and path.is_file()


def _is_png(path: Path) -> bool:
    try:
        if not _regular_file(path):
            return False
        with path.open("rb") as handle:
            return handle.read(len(_PNG)) == _PNG
    except OSError:
        return False


def _cost(path: Path) -> tuple[float, float] | None:
    """The running time and memory sphinx-gallery measured, when they are two finite numbers."""
    try:
        if not _regular_file(path):
            return None
        with path.open("rb") as handle:
            cost = json.loads(handle.read(1000).decode("utf-8"))
        values = (float(cost["time"]), float(cost["memory"]))
    except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError):
        return None
    return values if all(math.isfinite(v) and v >= 0 for v in values) else None


def _read(path: Path, limit: int) -> str | None:
    """The staged file's text ("" when there is none); None when it passes ``limit`` bytes."""
    try:
        if not _regular_file(path):
            return ""
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return ""
    return None if len(data) > limit else data.decode("utf-8", "replace")
