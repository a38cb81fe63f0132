"""Lint: judgements that cannot fail, because they compare values fixed before the script runs.

``check.equal(TABLE[name], v.backend.compile_backend, ...)`` compares the
script's own table with the project's backend descriptor: both are written in
source files, so the check holds or fails the same way on every machine and
says nothing about the claim. This module finds such judgements statically.

A value is *fixed* when it is a literal; a name every assignment of which binds
a fixed value and which nothing mutates; the backend descriptor
(``v.backend.<field>`` of a verification ``v``); or an expression built only
from fixed values (subscripts, ``.get``, operators, f-strings, pure builtins).
Anything that calls into torch or another library, or reads what the script
computed, is not fixed. Doubtful cases count as not fixed, so lint never
flags a check that measures something.
"""

from __future__ import annotations

import ast

JUDGEMENTS = ("equal", "close", "expect")
_PURE_BUILTINS = {
    "len",
    "str",
    "int",
    "float",
    "bool",
    "tuple",
    "list",
    "set",
    "frozenset",
    "sorted",
    "min",
    "max",
    "sum",
    "repr",
    "abs",
}
_PURE_METHODS = {
    "get",
    "keys",
    "values",
    "items",
    "copy",
    "index",
    "count",
    "upper",
    "lower",
    "strip",
    "split",
    "join",
    "format",
    "startswith",
    "endswith",
}


def fixed_judgements(nodes: list[ast.AST]) -> list[tuple[str, int]]:
    """(message, line) for each check.equal/close/expect whose operands are all fixed
    (``nodes``: every node of the script, as ast.walk gives them)."""
    verifiers = _names_bound_to_call(nodes, "verification")
    checks = _check_names(nodes)
    fixed = _fixed_names(nodes, verifiers, checks)
    found = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in JUDGEMENTS):
            continue
        receiver = node.func.value
        if not (isinstance(receiver, ast.Name) and receiver.id in checks):
            continue
        method = node.func.attr
        operands = node.args[:1] if method == "expect" else node.args[:2]
        if not operands or (method != "expect" and len(operands) < 2):
            continue
        if method == "expect" and isinstance(operands[0], ast.Constant):
            continue  # check.expect(False, ...) in a branch: the control flow is the judgement
        same = method != "expect" and _same_expression(*operands)
        if same or all(_is_fixed(o, fixed, verifiers) for o in operands):
            shown = ", ".join(ast.unparse(o) for o in operands)
            why = "compares an expression with itself" if same else "judges only values fixed before the script runs"
            found.append(
                (
                    f"check.{method}({shown}) {why} (literals, the script's own tables or the backend descriptor), "
                    "so it cannot fail for a reason tied to the claim; judge something the script measured",
                    node.lineno,
                )
            )
    return found


def _names_bound_to_call(nodes: list[ast.AST], function: str) -> set[str]:
    names = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == function:
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _check_names(nodes: list[ast.AST]) -> set[str]:
    """Names bound by ``with v.check(...) as <name>``."""
    names = set()
    for node in nodes:
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "check"
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    names.add(item.optional_vars.id)
    return names


def _bindings(nodes: list[ast.AST], api: set[str]) -> dict[str, list[ast.expr | None]]:
    """Every way each name is bound; None stands for a binding that is not ``name = value``
    (loops, with, imports, parameters, unpacking, mutation through a method or an item)."""
    bindings: dict[str, list[ast.expr | None]] = {}

    def bind(name: str, value: ast.expr | None) -> None:
        bindings.setdefault(name, []).append(value)

    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bind(target.id, node.value)
                else:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            bind(name.id, None)  # unpacking, or an item/attribute store mutating it
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bind(node.target.id, node.value)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr)):
            for name in ast.walk(node.target):
                if isinstance(name, ast.Name):
                    bind(name.id, None)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in ast.walk(node.optional_vars):
                if isinstance(name, ast.Name):
                    bind(name.id, None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bind((alias.asname or alias.name).split(".")[0], None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bind(node.name, None)
        elif isinstance(node, ast.arg):
            bind(node.arg, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bind(node.name, None)
        elif isinstance(node, ast.Call):
            _bind_mutated(node, bind, api)
    return bindings


def _bind_mutated(call: ast.Call, bind, api: set[str]) -> None:
    """A name whose method is called (other than a pure one) may not hold its assigned
    value any more; so may a list, dict or set passed to a function. The verification
    API (``v.*``, ``check.*``), print and pure builtins change nothing."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id in api:
            return
        if func.attr not in _PURE_METHODS:
            bind(func.value.id, None)
    if isinstance(func, ast.Name) and (func.id in _PURE_BUILTINS or func.id == "print"):
        return
    for argument in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(argument, ast.Name):
            bind(argument.id, _PASSED)


_PASSED = ast.Constant(value=Ellipsis)  # marks "passed to a function": harmless unless the value is mutable
_MUTABLE = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def _fixed_names(nodes: list[ast.AST], verifiers: set[str], checks: set[str]) -> set[str]:
    """Names bound to one fixed value (least fixed point: no name justifies itself).

    A name bound to different values in different places (``parses = True`` in
    one branch, ``False`` in another) records which way the script went: not fixed.
    """
    bindings = _bindings(nodes, verifiers | checks)
    single = {}
    for name, values in bindings.items():
        assigned = [v for v in values if v is not _PASSED]
        passed = len(assigned) < len(values)
        if name in verifiers or not assigned or None in assigned or len({ast.dump(v) for v in assigned}) > 1:
            continue
        if passed and isinstance(assigned[0], _MUTABLE):
            continue
        single[name] = assigned[0]
    fixed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, value in single.items():
            if name not in fixed and _is_fixed(value, fixed, verifiers):
                fixed.add(name)
                changed = True
    return fixed


def _is_fixed(node: ast.expr, fixed: set[str], verifiers: set[str]) -> bool:
    def each(nodes) -> bool:
        return all(n is None or _is_fixed(n, fixed, verifiers) for n in nodes)

    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in fixed
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return each(node.elts)
    if isinstance(node, ast.Dict):
        return each(node.keys) and each(node.values)
    if isinstance(node, ast.Attribute):
        return _is_descriptor(node, verifiers) or _is_fixed(node.value, fixed, verifiers)
    if isinstance(node, ast.Subscript):
        return _is_fixed(node.value, fixed, verifiers) and _is_fixed(node.slice, fixed, verifiers)
    if isinstance(node, ast.Call):
        func = node.func
        pure = (isinstance(func, ast.Name) and func.id in _PURE_BUILTINS) or (
            isinstance(func, ast.Attribute) and func.attr in _PURE_METHODS and _is_fixed(func.value, fixed, verifiers)
        )
        return pure and each(node.args) and each(k.value for k in node.keywords)
    if isinstance(node, ast.BinOp):
        return each([node.left, node.right])
    if isinstance(node, ast.UnaryOp):
        return _is_fixed(node.operand, fixed, verifiers)
    if isinstance(node, ast.BoolOp):
        return each(node.values)
    if isinstance(node, ast.Compare):
        return each([node.left, *node.comparators])
    if isinstance(node, ast.IfExp):
        return each([node.test, node.body, node.orelse])
    if isinstance(node, ast.JoinedStr):
        return each(node.values)
    if isinstance(node, ast.FormattedValue):
        return _is_fixed(node.value, fixed, verifiers)
    return False


def _is_descriptor(node: ast.Attribute, verifiers: set[str]) -> bool:
    """``v.backend`` or ``v.backend.<field>``: the project's descriptor, not a measurement."""
    chain = node
    while isinstance(chain, ast.Attribute) and not (isinstance(chain.value, ast.Name) and chain.attr == "backend"):
        chain = chain.value
    return isinstance(chain, ast.Attribute) and isinstance(chain.value, ast.Name) and chain.value.id in verifiers


def _same_expression(a: ast.expr, b: ast.expr) -> bool:
    """The same expression on both sides, with no call that could give two different values."""
    if any(isinstance(n, ast.Call) for n in (*ast.walk(a), *ast.walk(b))):
        return False
    return ast.dump(a) == ast.dump(b)
