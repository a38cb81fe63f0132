"""Lint the knowledge base: every problem at once, each naming file, field or line.

Schema problems come from loading the records (torchclaims.claims); this module
adds what a reviewer would check across files: records against scripts, ids,
duplicate propositions, scripts that never call the verification API, literal
device strings that would pin a script to one backend, and judgements that
cannot fail because they compare values fixed before the script runs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .. import limits
from ..backends import BUILTIN_BACKENDS
from ..claims import Claim, ClaimSet, Relation, load_claims
from ..errors import InvalidFileError, Problem
from ..evidence.memo import ContentMemo, code_digest
from ..fileio import decode_utf8, read_bytes
from ..project import CLAIMS, Folders
from .fixed_judgements import fixed_judgements
from .gallery_text import script_markup_problems

DEVICE_TYPES = sorted({b.device_type for b in BUILTIN_BACKENDS} | {"hip", "privateuseone"})
UNDER_TEST = "# device under test"  # marks a line whose device literal is what the claim is about
_DEVICE_LITERAL = re.compile(rf"^({'|'.join(DEVICE_TYPES)})(:\d+)?$")


def _verification_ids(nodes: list[ast.AST]) -> list[tuple[str | None, int]]:
    """(claim id or None when not a literal, line) of each verification(...) call."""
    found = []
    for node in nodes:
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name == "verification":
                first = node.args[0] if node.args else None
                literal = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
                found.append((literal, node.lineno))
    return found


def _calls_method(nodes: list[ast.AST], name: str) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name for node in nodes
    )


def _device_literals(nodes: list[ast.AST]) -> list[tuple[str, int]]:
    """Device strings written into code: .to("cuda"), device="cpu", torch.device("xla")."""
    found = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name == "cuda" and isinstance(node.func, ast.Attribute) and not node.args:
            found.append(("cuda", node.lineno))  # model.cuda() names a device without a string
        candidates = [kw.value for kw in node.keywords if kw.arg in ("device", "map_location", "device_type")]
        if name in ("to", "device", "autocast", "cuda"):
            candidates += node.args[:1]
        elif name == "load":
            candidates += node.args[1:2]  # torch.load(f, map_location)
        for value in candidates:
            if isinstance(value, ast.Constant) and isinstance(value.value, str) and _DEVICE_LITERAL.match(value.value):
                found.append((value.value, value.lineno))
    return found


_API = "torchclaims"  # the package whose objects a script must use, never change
_SETTERS = (
    "setattr",
    "delattr",
    "__setattr__",
    "__delattr__",
    "patch",
    "object",
)  # builtins, object.__setattr__, mock.patch(.object)


def _names_api(node: ast.AST) -> bool:
    """A string literal naming the package or one of its modules ("torchclaims.verify")."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.split(".")[0] == _API


def _reaches_api(node: ast.AST, names: set[str]) -> bool:
    """Whether an expression is (an attribute of) the verification API: a name
    bound to it, ``sys.modules["torchclaims..."]``, ``import_module("torchclaims...")``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id in names
        if isinstance(node, ast.Subscript) and _names_api(node.slice):
            return True
        if isinstance(node, ast.Call) and node.args and _names_api(node.args[0]):
            return True
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return False


def _bindings(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs a statement binds (with ... as: the context manager)."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [(node.optional_vars, node.context_expr)]
    return []


SCRIPT_INTERFACE = ("torchclaims.verify", "torchclaims.coverage")  # what scripts may import, with submodules


def outside_interface(nodes: list[ast.AST]) -> list[tuple[str, int]]:
    """(message, line) for each import of a torchclaims module outside the scripts' interface.

    The engine's other modules change with the engine; a script that imports
    them breaks, or changes its hashed text, with every reorganisation."""
    found = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [node.module or ""]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            inside = any(module == part or module.startswith(part + ".") for part in SCRIPT_INTERFACE)
            if module.split(".")[0] == _API and not inside:
                found.append(
                    (
                        f"imports {module}, which is not part of the scripts' interface; "
                        f"import from {' or '.join(SCRIPT_INTERFACE)} (torchclaims.verify names what it offers)",
                        node.lineno,
                    )
                )
    return found


def api_patches(nodes: list[ast.AST]) -> list[tuple[str, int]]:
    """(message, line) for each change a script or helper makes to the verification
    API: assigning or deleting its attributes (``Check.expect = ...``, ``v.finish =
    ...``), setattr or mock.patch on it, reaching into its private state. The runner
    judges every record again from its measurements (torchclaims.evidence.judging), but code
    that changes how checks judge must not get past review."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == _API:
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {
                alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name.split(".")[0] == _API
            }
    grew = True
    while grew:  # what the API returns: v = verification(...), with v.check(...) as check
        before = len(names)
        for node in nodes:
            for target, value in _bindings(node):
                if isinstance(target, ast.Name) and _reaches_api(value, names):
                    names.add(target.id)
        grew = len(names) > before
    found = []
    for node in nodes:
        targets = (
            node.targets
            if isinstance(node, (ast.Assign, ast.Delete))
            else [node.target]
            if isinstance(node, (ast.AugAssign, ast.AnnAssign))
            else []
        )
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _reaches_api(target.value, names):
                found.append(
                    (
                        f"changes the verification API ({ast.unparse(target)}); a script must use it as it is",
                        target.lineno,
                    )
                )
        if isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in _SETTERS and (_reaches_api(node.args[0], names) or _names_api(node.args[0])):
                found.append(
                    (
                        f"changes the verification API ({ast.unparse(node)[:80]}); a script must use it as it is",
                        node.lineno,
                    )
                )
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and _reaches_api(node.value, names)
        ):
            found.append(
                (
                    f"reaches into the verification API's private state ({ast.unparse(node)}); use its public methods",
                    node.lineno,
                )
            )
    return sorted(set(found), key=lambda item: item[1])


def check_script(path: Path, rel: str) -> tuple[list[tuple[str | None, int]], list[Problem]]:
    """Problems inside one gallery script, and the claim ids it verifies."""
    try:
        source = decode_utf8(Path(rel), read_bytes(path, limits.LIMITS.script_bytes, "script"))
    except InvalidFileError as exc:
        return [], [Problem(Path(rel), p.field, p.message, p.line) for p in exc.problems]
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [], [Problem(Path(rel), "", f"syntax error: {exc.msg}", exc.lineno)]
    problems = [
        Problem(Path(rel), "", f"{why}; write it as plain text (the site shows this block as text)", line)
        for line, why in script_markup_problems(source)
    ]
    nodes = list(ast.walk(tree))  # walked once: each check below goes through every node
    calls = _verification_ids(nodes)
    if not calls:
        problems.append(
            Problem(
                Path(rel), "", 'never calls torchclaims.verify.verification("<claim-id>"); a script must verify a claim'
            )
        )
    for claim_id, line in calls:
        if claim_id is None:
            problems.append(
                Problem(Path(rel), "", "verification() must be given the claim id as a string literal", line)
            )
    docstring = ast.get_docstring(tree)
    if docstring is None:
        problems.append(
            Problem(Path(rel), "", "needs a module docstring: a reST title line and what the script checks", 1)
        )
    else:
        lines = docstring.splitlines()
        if len(lines) < 2 or not lines[1] or set(lines[1]) != {"="} or len(lines[1]) < len(lines[0]):
            problems.append(
                Problem(
                    Path(rel),
                    "",
                    "the docstring must open with a title underlined by '=' at least as long as the title",
                    1,
                )
            )
        if "TODO" in docstring:
            problems.append(
                Problem(Path(rel), "", "the docstring still holds template text (TODO); describe the checks", 1)
            )
        for claim_id, _ in calls:
            if claim_id and f":claim-verdict:`{claim_id}`" not in docstring:
                problems.append(
                    Problem(
                        Path(rel),
                        "",
                        f"the docstring should show the verdict: add the line :claim-verdict:`{claim_id}`",
                        1,
                    )
                )
    if calls and not _calls_method(nodes, "finish"):
        problems.append(
            Problem(Path(rel), "", "never calls v.finish(), so no result record is written; end the script with it")
        )
    source_lines = source.splitlines()
    for literal, line in _device_literals(nodes):
        if UNDER_TEST in source_lines[line - 1]:
            continue  # a claim about code written for one device names that device on purpose
        problems.append(
            Problem(
                Path(rel),
                "",
                f"literal device {literal!r} pins the script to one backend; use v.device "
                f"(or v.reference_device for the CPU reference; end the line with {UNDER_TEST!r} "
                "when that device is what the claim is about)",
                line,
            )
        )
    problems.extend(Problem(Path(rel), "", message, line) for message, line in fixed_judgements(nodes))
    problems.extend(Problem(Path(rel), "", message, line) for message, line in api_patches(nodes))
    problems.extend(Problem(Path(rel), "", message, line) for message, line in outside_interface(nodes))
    return calls, problems


def check_helper(path: Path, rel: str) -> list[Problem]:
    """Problems in a gallery helper module (gallery/_*.py): what it does to the verification API, what it imports."""
    try:
        tree = ast.parse(
            decode_utf8(Path(rel), read_bytes(path, limits.LIMITS.script_bytes, "script")), filename=str(path)
        )
    except InvalidFileError as exc:
        return [Problem(Path(rel), p.field, p.message, p.line) for p in exc.problems]
    except SyntaxError as exc:
        return [Problem(Path(rel), "", f"syntax error: {exc.msg}", exc.lineno)]
    nodes = list(ast.walk(tree))
    return [Problem(Path(rel), "", message, line) for message, line in api_patches(nodes) + outside_interface(nodes)]


def _workaround_measure(path: Path, claim: Claim, claims: ClaimSet) -> list[Problem]:
    """A workaround measured by another claim needs that claim, with a script whose records can show it."""
    other = claim.workaround.measured_by if claim.workaround else None
    if other is None:
        return []
    if other not in claims.claims:
        return [Problem(path, "workaround.measured_by", f"no claim with id {other!r}")]
    if not claims.claims[other].executable:
        return [Problem(path, "workaround.measured_by", f"claim {other!r} is attributed: no record measures it")]
    return []


def _placeholders(path: Path, claim) -> list[Problem]:
    """Template text left in a record (see torchclaims new)."""
    found = []
    for name, value in claim.model_dump(mode="json").items():
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            fields = item.items() if isinstance(item, dict) else [("", item)]
            for key, text in fields:
                where = ".".join(
                    str(p) for p in (name, index if isinstance(value, list) else None, key) if p not in (None, "")
                )
                if isinstance(text, str) and ("TODO" in text or "example.org" in text):
                    found.append(Problem(path, where, "still holds template text (TODO / example.org); replace it"))
    return found


def unspoken_backends(path: Path, claim: Claim) -> list[Problem]:
    """A proposition about a backend that no source's claim speaks about (an own finding needs none)."""
    unspoken = [b for b in claim.about if b not in claim.claimed_about]
    if not unspoken:
        return []
    return [
        Problem(
            path,
            "about",
            f"the proposition is about {', '.join(unspoken)}, which no source's claim speaks about: "
            "drop the backend, cite a source that makes the claim about it (with its claimant and about), "
            "or make it an own finding",
        )
    ]


def merged_claimants(path: Path, claim: Claim) -> list[Problem]:
    """Relation "is" restates one claimant's claim; a proposition over several merges their claims."""
    if claim.relation is not Relation.IS or len(claim.claimants) < 2:
        return []
    return [
        Problem(
            path,
            "relation",
            f'relation "is" with {len(claim.claimants)} claimants ({", ".join(claim.claimants)}) '
            'merges their claims into one proposition: use "narrows", or keep one claimant',
        )
    ]


_LINT_CODE = code_digest(
    "authoring/lint.py", "authoring/fixed_judgements.py", "authoring/gallery_text.py", "backends.py"
)


def _script_facts(
    path: Path, rel: str, memo: ContentMemo
) -> tuple[list[tuple[str | None, int]], list[Problem], str | None]:
    """check_script and the script's title, remembered by the script's text (a build lints every run)."""
    try:
        data = read_bytes(path, limits.LIMITS.script_bytes, "script")
    except InvalidFileError:
        return *check_script(path, rel), None

    def work_out() -> dict:
        calls, problems = check_script(path, rel)
        return {
            "calls": [list(c) for c in calls],
            "problems": [[p.field, p.message, p.line] for p in problems],
            "title": script_title(path),
        }

    facts = memo.recall("lint", _LINT_CODE, rel.encode() + b"\0" + data, work_out, _valid_facts)
    problems = [Problem(Path(rel), field, message, line) for field, message, line in facts["problems"]]
    return [(claim_id, line) for claim_id, line in facts["calls"]], problems, facts["title"]


def _helper_problems(path: Path, rel: str, memo: ContentMemo) -> list[Problem]:
    """check_helper, remembered by the helper's text."""
    try:
        data = read_bytes(path, limits.LIMITS.script_bytes, "script")
    except InvalidFileError:
        return check_helper(path, rel)
    found = memo.recall(
        "lint helper",
        _LINT_CODE,
        rel.encode() + b"\0" + data,
        lambda: [[p.field, p.message, p.line] for p in check_helper(path, rel)],
        _valid_problems,
    )
    return [Problem(Path(rel), field, message, line) for field, message, line in found]


def _valid_problems(value: object) -> bool:
    return isinstance(value, list) and all(_shaped(problem, str, str, (int, type(None))) for problem in value)


def _valid_facts(value: object) -> bool:
    """Whether a remembered answer has the shape work_out gives (the memo file is untrusted)."""
    if not isinstance(value, dict) or not isinstance(value.get("calls"), list):
        return False
    nothing = type(None)
    return (
        all(_shaped(call, (str, nothing), int) for call in value["calls"])
        and _valid_problems(value["problems"])
        and isinstance(value.get("title"), (str, nothing))
    )


def _shaped(item: object, *types) -> bool:
    return (
        isinstance(item, list)
        and len(item) == len(types)
        and all(isinstance(v, t) for v, t in zip(item, types, strict=True))
    )


def cross_check(root: Path, claims: ClaimSet, memo: ContentMemo | None = None) -> list[Problem]:
    """Records against scripts and against each other (``memo`` remembers what scripts held)."""
    memo = memo or ContentMemo()
    problems: list[Problem] = []
    scripts: dict[str, str] = {}
    for claim in claims.executable():
        path = claims.paths[claim.id]
        if claim.script in scripts:
            problems.append(
                Problem(
                    path,
                    "script",
                    f"{claim.script} already verifies claim {scripts[claim.script]!r}; one script per claim",
                )
            )
        scripts[claim.script] = claim.id
        if not (root / claim.script).is_file():
            problems.append(
                Problem(path, "script", f"{claim.script} does not exist; create it (torchclaims new writes a template)")
            )
    propositions: dict[str, str] = {}
    for claim_id, claim in sorted(claims.claims.items()):
        path = claims.paths[claim_id]
        problems.extend(_placeholders(path, claim))
        problems.extend(unspoken_backends(path, claim) + merged_claimants(path, claim))
        key = " ".join(claim.proposition.lower().split())
        if key in propositions:
            problems.append(
                Problem(path, "proposition", f"same proposition as claim {propositions[key]!r}; merge the records")
            )
        propositions.setdefault(key, claim_id)
        for other in claim.see_also:
            if other not in claims.claims:
                problems.append(Problem(path, "see_also", f"no claim with id {other!r}"))
        problems.extend(_workaround_measure(path, claim, claims))
    gallery = Folders(root).gallery
    for script in sorted(gallery.glob("*.py")) if gallery.is_dir() else []:
        rel = script.relative_to(root).as_posix()
        if script.name.startswith("_"):  # a helper module shared by scripts
            problems.extend(_helper_problems(script, rel, memo))
            continue
        ids, script_problems, title = _script_facts(script, rel, memo)
        problems.extend(script_problems)
        for claim_id, line in ids:
            claim = claims.claims.get(claim_id) if claim_id else None
            if claim_id is None or claim_id in claims.broken:
                continue  # reported already: a non-literal id, or a record that failed to load
            if claim is None:
                problems.append(
                    Problem(Path(rel), "", f"verifies claim {claim_id!r}, which has no record in claims/", line)
                )
            elif claim.script != rel:
                problems.append(
                    Problem(
                        Path(rel), "", f"verifies claim {claim_id!r}, whose record names script {claim.script}", line
                    )
                )
            elif title not in (None, claim.title):
                problems.append(
                    Problem(
                        Path(rel),
                        "",
                        "the docstring's title must be the claim's title, so the claim has one title everywhere: "
                        f"{claim.title!r}",
                        2,
                    )
                )
    return problems


def script_title(path: Path) -> str | None:
    """The first line of a script's docstring (None when it has none or does not parse)."""
    try:
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (SyntaxError, OSError, UnicodeDecodeError):
        return None
    return docstring.splitlines()[0].strip() if docstring else None


def lint(root: Path, claims_dir: str = CLAIMS) -> list[Problem]:
    """Every problem in the knowledge base under ``root``."""
    claims = load_claims(root / claims_dir)
    return claims.problems + cross_check(root, claims)
