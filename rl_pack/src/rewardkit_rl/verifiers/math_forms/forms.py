"""Reading an answer's form: relation, list, set, tuple, interval, matrix, piecewise, text or expression.

``read(latex)`` works on the string alone (no SymPy): it finds the top-level structure and leaves
the leaves (plain expressions) as LaTeX for ``values`` to parse. A shape it recognises but does
not support is an ``Unsupported`` form with the reason; it is never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rewardkit_rl.verifiers.math_forms.latex import (
    balanced,
    clean,
    enclosing,
    group_end,
    split_top,
    strip_text,
    text_groups,
    top_level,
    unwrap,
)


@dataclass(frozen=True, slots=True)
class Leaf:
    """A plain expression (number, symbolic expression, quantity with units), as cleaned LaTeX.
    ``approx`` holds the words saying it is rounded ("to two significant figures"), if any."""

    latex: str
    approx: str = ""


@dataclass(frozen=True, slots=True)
class Text:
    """Words (``\\text{Evelyn}``, ``\\text{(C)}``): compared as normalised text."""

    words: str


@dataclass(frozen=True, slots=True)
class Relation:
    """``sides[0] ops[0] sides[1] ops[1] ...``; ops are ``= < <= > >= != ~ in`` (``~`` is
    ``\\approx``). An empty side (``\\approx 0.91``) is None."""

    sides: tuple[Form | None, ...]
    ops: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Items:
    """Several values. ``kind``: ``list`` (bare, separated by commas or words; the ``joiners``
    say which words), ``set`` (``\\{...\\}``), ``tuple`` (three or more in brackets, or
    ``\\langle...\\rangle``), ``pair`` (``(a, b)``: an ordered pair or an open interval)."""

    kind: str
    items: tuple[Form, ...]
    joiners: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Interval:
    low: Leaf
    high: Leaf
    closed_low: bool
    closed_high: bool


@dataclass(frozen=True, slots=True)
class Union:
    """Intervals and finite sets joined by ``\\cup``."""

    parts: tuple[Interval | Items, ...]


@dataclass(frozen=True, slots=True)
class Matrix:
    rows: tuple[tuple[Form, ...], ...]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.rows[0]) if self.rows else 0


@dataclass(frozen=True, slots=True)
class Piecewise:
    """Branches ``(expression, condition)``; a condition of None means "otherwise"."""

    branches: tuple[tuple[Form, Form | None], ...]


@dataclass(frozen=True, slots=True)
class Restated:
    """One answer stated two ways, ``relation : interval`` (``-1<x \\le 1:(-1,1]``): a reference
    is usable only when both halves denote the same set."""

    statement: Form
    restatement: Form


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A shape that is recognised but not compared (the reason says which)."""

    reason: str


Form = Leaf | Text | Relation | Items | Interval | Union | Matrix | Piecewise | Restated | Unsupported

_MAX_DEPTH = 6
_LIST_SEPARATOR = re.compile(
    r",|;|\\text\s*\{\s*,?\s*(?:and|or)\s*,?\s*\}|\s(?:and|or)\s|\\(?:lor|vee|land|wedge)(?![a-zA-Z])"
)
# ``!=`` is not a relation here: ``5!=120`` is a factorial.
_RELATION = re.compile(r"\\(?:le|ge|ne|approx|in|notin)(?![a-zA-Z])|<=|>=|=|<|>")
_OPS = {
    "\\le": "<=",
    "\\ge": ">=",
    "\\ne": "!=",
    "\\approx": "~",
    "\\in": "in",
    "<=": "<=",
    ">=": ">=",
}
_UNSUPPORTED_RELATION = re.compile(
    r"\\(?:equiv|sim|simeq|cong|subset|subseteq|supset|supseteq|mid|Rightarrow|Leftarrow|Leftrightarrow"
    r"|implies|impliedby|iff|to|rightarrow|leftarrow|mapsto|parallel|perp|propto|ll|gg|prec|succ|notin"
    r"|pmod|bmod|forall|exists|setminus|cap)(?![a-zA-Z])|:="
)
_ELLIPSIS = re.compile(r"\\(?:dots|ldots|cdots|dotsc|dotsb|vdots|ddots)(?![a-zA-Z])|\.\.\.")
_MATRIX_ENVS = {"pmatrix", "bmatrix", "Bmatrix", "matrix", "smallmatrix", "array"}
_ENV = re.compile(r"\\begin\{([a-zA-Z*]+)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}", re.DOTALL)
_ROW_BREAK = re.compile(r"\\\\(?:\[[^\]]*\])?|\\cr(?![a-zA-Z])")
_CELL = re.compile(r"&")
_UNION = re.compile(r"\\cup(?![a-zA-Z])")
_INFINITY = re.compile(r"^[-+]?\\infty$")
_THOUSANDS = re.compile(r"(?<![\d.,])([1-9]\d{0,2})((?:,\d{3})+)(?![\d,])")
_DECIMAL_COMMA = re.compile(r"-?0,\d+")
_APPROX_MARKER = re.compile(
    r"approx|significant|sig\.? ?fig|decimal place|nearest|rounded|to \w+ places", re.IGNORECASE
)
_PLUS_MINUS = re.compile(r"\\(?:pm|mp)(?![a-zA-Z])")
_NUMERIC_TEXT = re.compile(r"[-+]?[\d.,\s]+")
_CONDITION_WORDS = re.compile(r"^(?:\\text\s*\{\s*(?:if|for|when|where)\s*\}|if|for|when)\s*|\s*,$")
_CONDITION_WORD_CELL = re.compile(r"\s*(?:\\text\s*\{\s*(?:if|for|when|where)?\s*\}|if|for|when|where|,)?\s*")
_OTHERWISE = re.compile(r"^(?:\\text\s*\{\s*)?(?:otherwise|else|elsewhere)\s*\}?$", re.IGNORECASE)


_BRACE_ARRAY = re.compile(
    r"\\\{\s*\\begin\{array\}\s*\{[^{}]*\}(?P<body>.*?)\\end\{array\}(?!\s*\\\})", re.DOTALL
)
_RESTATED = re.compile(r":(?!=)")
_INEQUALITY = re.compile(r"\\(?:le|ge|ne)(?![a-zA-Z])|<|>")


def read(latex: str) -> Form:
    """The form of an answer or a reference (see ``latex.unwrap`` for what is taken off first)."""
    return _read(_brace_arrays(clean(unwrap(latex))), 0)


def _brace_arrays(text: str) -> str:
    """``\\left\\{\\begin{array}{..} .. \\end{array}\\right.`` (``clean`` leaves ``\\{`` and an
    array with nothing closing the brace) is a ``cases`` environment written by hand."""
    return _BRACE_ARRAY.sub(lambda match: "\\begin{cases}" + match.group("body") + "\\end{cases}", text)


def _read(text: str, depth: int) -> Form:
    if depth > _MAX_DEPTH:
        return Unsupported("the answer is nested too deeply")
    text = text.strip()
    if not text:
        return Unsupported("an empty answer")
    if not balanced(text):
        return Unsupported("unbalanced brackets")
    text, approx = _approx_marker(text)
    if _DECIMAL_COMMA.fullmatch(text):
        text = text.replace(",", ".")  # 0,111 cannot be a thousands number
    text = _thousands(text)
    restated = _restated(text, depth)
    if restated is not None:
        return restated
    parts = _parts(text)
    if len(parts) > 1:
        joiners = frozenset(joiner for _, joiner in parts if joiner)
        items = tuple(item for part, _ in parts for item in _expand_pm(part, depth))
        return Items("list", _one_name_for_all(items), joiners)
    single = _expand_pm(text, depth, approx)
    if len(single) > 1:
        return Items("list", single, frozenset({"pm"}))
    return single[0]


def _restated(text: str, depth: int) -> Restated | None:
    """``relation : interval`` (``x<-7:(-\\infty,-7)``): an inequality on the left of the one
    top-level colon; ratios (``3:1``) and times (``4:30``) have none."""
    halves = split_top(text, _RESTATED)
    if len(halves) != 2:
        return None
    left, right = halves[0][0].strip(), halves[1][0].strip()
    if not left or not right or not any(_INEQUALITY.match(left, index) for index, _ in top_level(left)):
        return None
    return Restated(_read(left, depth + 1), _read(right, depth + 1))


def _one_name_for_all(items: tuple[Form, ...]) -> tuple[Form, ...]:
    """``x = 1, 2, 3`` names every value: ``x = 1, x = 2, x = 3``; ``x \\ne -1, 4`` excludes each:
    ``x \\ne -1, x \\ne 4``."""
    first = items[0]
    if not (
        isinstance(first, Relation)
        and first.ops in (("=",), ("!=",))
        and label_key(first.sides[0]) is not None
    ):
        return items
    if not all(isinstance(item, Leaf) for item in items[1:]):
        return items
    name = first.sides[0]
    return (first, *(Relation((name, item), first.ops) for item in items[1:]))


def _parts(text: str) -> list[tuple[str, str]]:
    parts = []
    for part, separator in split_top(text, _LIST_SEPARATOR):
        part = part.strip()
        if part:
            word = (
                "or"
                if re.search(r"or|lor|vee", separator)
                else "and"
                if re.search(r"and|land|wedge", separator)
                else ""
            )
            parts.append((part, word))
    return parts or [(text, "")]


def _expand_pm(text: str, depth: int, approx: str = "") -> tuple[Form, ...]:
    """``a \\pm b`` is the two values ``a + b`` and ``a - b`` (in a value or a relation; a
    container expands its own items)."""
    signs = [match for match in _PLUS_MINUS.finditer(text) if not _inside_text(text, match.start())]
    form = _single(text, depth, approx)
    if not signs or not isinstance(form, (Leaf, Relation)):
        return (form,)
    if len(signs) > 1:
        return (Unsupported("more than one \\pm in one value"),)
    sign = signs[0]
    plus, minus = ("+", "-") if sign.group(0) == "\\pm" else ("-", "+")
    return tuple(
        _single(text[: sign.start()] + symbol + text[sign.end() :], depth, approx) for symbol in (plus, minus)
    )


def _inside_text(text: str, index: int) -> bool:
    return any(start <= index < end for start, end, _ in text_groups(text))


def _approx_marker(text: str) -> tuple[str, str]:
    for start, end, content in reversed(text_groups(text)):
        if _APPROX_MARKER.search(content):
            before, after = text[:start].rstrip(), text[end:].lstrip()
            if before.endswith("(") and after.startswith(")"):
                before, after = before[:-1], after[1:]
            return (before + " " + after).strip(), content.strip() or "approx"
    return text, ""


def _thousands(text: str) -> str:
    """``1,000,000`` is one number when no other comma is at the top level."""
    if not _THOUSANDS.search(text) or re.search(r"[(\[]|\\\{", text):
        return text
    candidate = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), text)
    return candidate if len(_parts(candidate)) == 1 else text


def _single(text: str, depth: int, approx: str = "") -> Form:
    text = text.strip()
    if not text:
        return Unsupported("an empty value")
    if "\\begin{cases}" in text:
        return _piecewise_or_labelled(text, depth)
    for index, length in top_level(text):
        if _UNSUPPORTED_RELATION.match(text, index):
            word = text[index : index + length]
            return Unsupported(f"the relation or operator {word!r} is not supported")
    relation = split_top(text, _RELATION)
    if len(relation) > 1:
        return _relation(relation, depth)
    union = split_top(text, _UNION)
    if len(union) > 1:
        return _union([part.strip() for part, _ in union], depth)
    wrapped = enclosing(text)
    if wrapped is not None:
        return _enclosed(*wrapped, depth=depth, approx=approx)
    if _ELLIPSIS.search(text):
        return Unsupported("an elided list (\\dots)")
    if "\\begin{" in text:
        return _combination(text, depth)
    groups = text_groups(text)
    if len(groups) == 1 and groups[0][0] == 0 and groups[0][1] == len(text):
        return _text(groups[0][2], depth)
    return Leaf(text, approx)


_SIGN = re.compile(r"[-+]")
_PRODUCT_MARK = re.compile(r"^\s*(?:\\cdot|\\times|\*)?\s*|\s*(?:\\cdot|\\times|\*)?\s*$")


def _combination(text: str, depth: int) -> Form:
    """A sum of matrices times scalars (``c_{1}[\\begin{array}{r}-1 \\\\ 1\\end{array}] e^{t} + ...``,
    the general solution of a linear system of ODEs) as the one matrix it equals: each cell is
    the sum of its terms' cells times their coefficients, as LaTeX for ``values`` to parse."""
    terms = [(part.strip(), sign) for part, sign in split_top(text, _SIGN) if part.strip()]
    if not terms:
        return Unsupported("a matrix or environment inside an expression")
    combined: list[list[str]] | None = None
    for part, sign in terms:
        found = _scaled_matrix(part, depth)
        if isinstance(found, Unsupported):
            return found
        coefficient, matrix = found
        cells = [
            [f"{'-' if sign == '-' else ''}({coefficient})\\cdot({cell.latex})" for cell in row]  # type: ignore[union-attr]
            for row in matrix.rows
        ]
        if combined is None:
            combined = cells
        elif [len(row) for row in combined] != [len(row) for row in cells]:
            return Unsupported("a sum of matrices of different shapes")
        else:
            combined = [[f"{mine}+{theirs}" for mine, theirs in zip(a, b)] for a, b in zip(combined, cells)]
    assert combined is not None
    return Matrix(tuple(tuple(Leaf(cell.replace("+-", "-")) for cell in row) for row in combined))


def _scaled_matrix(term: str, depth: int) -> tuple[str, Matrix] | Unsupported:
    """``(coefficient, matrix)`` of one term of a sum of matrices: exactly one matrix of plain
    values, the rest of the term (before and after it) a scalar factor."""
    found: list[tuple[int, int]] = []
    for index, _ in top_level(term):
        end = group_end(term, index)
        if end is not None and "\\begin{" in term[index:end]:
            found.append((index, end))
    if len(found) != 1:
        what = "a term without a matrix" if not found else "a product of matrices"
        return Unsupported(f"{what} in a sum of matrices")
    start, end = found[0]
    matrix = _single(term[start:end], depth + 1)
    if not isinstance(matrix, Matrix) or not all(
        isinstance(cell, Leaf) for row in matrix.rows for cell in row
    ):
        return Unsupported("a sum of matrices whose entries are not plain values")
    before, after = (_PRODUCT_MARK.sub("", part) for part in (term[:start], term[end:]))
    if "\\begin{" in before + after:
        return Unsupported("a product of matrices in a sum of matrices")
    factors = [f"({part})" for part in (before, after) if part]
    return ("".join(factors) or "1"), matrix


def _text(content: str, depth: int) -> Form:
    content = content.strip()
    if _NUMERIC_TEXT.fullmatch(content):
        return _read(content, depth + 1)
    words = [word.strip() for word in re.split(r",|;", content) if word.strip()]
    if len(words) > 1:
        return Items("list", tuple(Text(word) for word in words))
    return Text(content)


def _relation(parts: list[tuple[str, str]], depth: int) -> Form:
    sides: list[Form | None] = []
    ops: list[str] = []
    for index, (part, op) in enumerate(parts):
        if index:
            ops.append(_OPS.get(op.strip(), op.strip()))
        part = part.strip()
        if not part:
            if index == 0:
                sides.append(None)
                continue
            return Unsupported("a relation with an empty side")
        sides.append(_single(part, depth + 1))
    if sides[0] is None and (len(ops) != 1 or ops[0] not in ("~", "=")):
        return Unsupported("a relation with an empty side")
    if "in" in ops and (len(ops) != 1):
        return Unsupported("a chain with \\in")
    return Relation(tuple(sides), tuple(ops))


def _union(parts: list[str], depth: int) -> Form:
    pieces: list[Interval | Items] = []
    for part in parts:
        form = _single(part, depth + 1)
        if isinstance(form, Items) and form.kind == "pair":
            form = Interval(form.items[0], form.items[1], False, False)  # type: ignore[arg-type]
        if isinstance(form, Interval) or (isinstance(form, Items) and form.kind == "set"):
            pieces.append(form)
        else:
            return Unsupported("a union of something other than intervals and finite sets")
    return Union(tuple(pieces))


def _enclosed(opener: str, inside: str, closer: str, *, depth: int, approx: str) -> Form:
    if opener == "\\{":
        items = _set_items(inside, depth)
        return items if isinstance(items, Unsupported) else Items("set", items)
    if opener.startswith("\\begin"):
        return _environment(opener + inside + closer, depth)
    if opener == "\\langle":
        items = _set_items(inside, depth)
        return items if isinstance(items, Unsupported) else Items("tuple", items)
    if opener == "{":
        return _read(inside, depth + 1)
    inner = inside.strip()
    if inner.startswith("\\begin{") and enclosing(inner) is not None:
        return _environment(inner, depth)
    parts = [part.strip() for part, _ in split_top(inner, re.compile(",|;"))]
    if len(parts) == 1:
        if opener == "(" and closer == ")":
            return _read(inner, depth + 1)
        return Unsupported(f"a bracket {opener}{closer} around one value")
    forms = []
    for part in parts:
        expanded = _expand_pm(part, depth + 1)
        if len(expanded) != 1:
            return Unsupported("\\pm inside a tuple or interval")
        forms.append(expanded[0])
    if len(parts) == 2:
        infinite = any(_INFINITY.match(part) for part in parts)
        if opener == "(" and closer == ")" and not infinite:
            return Items("pair", tuple(forms))
        if not all(isinstance(form, Leaf) for form in forms):
            return Unsupported("an interval whose ends are not plain values")
        return Interval(forms[0], forms[1], opener == "[", closer == "]")  # type: ignore[arg-type]
    if opener + closer in ("()", "[]"):
        return Items("tuple", tuple(forms))
    return Unsupported(f"{opener}...{closer} around {len(parts)} values")


def _set_items(inside: str, depth: int) -> tuple[Form, ...] | Unsupported:
    inside = inside.strip()
    if not inside:
        return ()
    for index, _ in top_level(inside):
        if inside[index] in ":|" or inside.startswith("\\mid", index):
            return Unsupported("a set-builder set")
    parts = [part.strip() for part, _ in split_top(inside, re.compile(",|;"))]
    return tuple(item for part in parts if part for item in _expand_pm(part, depth + 1))


def _environment(text: str, depth: int) -> Form:
    match = _ENV.fullmatch(text.strip())
    if match is None:
        return Unsupported("an environment that does not close")
    name, body = match.group(1), match.group(2)
    if name == "cases":
        return _cases(body, depth)
    if name not in _MATRIX_ENVS:
        return Unsupported(f"the environment {name!r} (a determinant or layout) is not supported")
    rows = [row for row in _ROW_BREAK.split(body) if row.strip()]
    if not rows:
        return Unsupported("an empty matrix")
    cells = tuple(tuple(_single(cell.strip(), depth + 1) for cell in _CELL.split(row)) for row in rows)
    if len({len(row) for row in cells}) != 1:
        return Unsupported("a matrix with rows of different lengths")
    return Matrix(cells)


def _cases(body: str, depth: int) -> Form:
    rows = [_CELL.split(row) for row in _ROW_BREAK.split(body) if row.strip()]
    if rows and all(len(cells) == 1 for cells in rows):
        return _system(rows, depth)
    branches: list[tuple[Form, Form | None]] = []
    for cells in rows:
        if len(cells) == 3 and _CONDITION_WORD_CELL.fullmatch(cells[1]):
            cells = [cells[0], cells[2]]  # an array {rll}: expression & \text{if} & condition
        if len(cells) != 2:
            return Unsupported("a piecewise branch without exactly one condition")
        expression = _single(cells[0].strip().rstrip(",").strip(), depth + 1)
        condition_text = _CONDITION_WORDS.sub("", cells[1].strip()).strip()
        condition_text = _CONDITION_WORDS.sub("", condition_text).strip()
        if _OTHERWISE.match(condition_text):
            condition: Form | None = None
        else:
            condition = _read(
                strip_text(condition_text) if "\\text" in condition_text else condition_text, depth + 1
            )
        branches.append((expression, condition))
    if not branches:
        return Unsupported("an empty piecewise function")
    return Piecewise(tuple(branches))


def _system(rows: list[list[str]], depth: int) -> Form:
    """A brace over one equation per row (``\\left\\{\\begin{array}{l} x=1 \\\\ y=2 \\end{array}\\right.``)
    is a system: the list of its equations."""
    equations = tuple(_single(cells[0].strip().rstrip(",").strip(), depth + 1) for cells in rows)
    if not all(isinstance(equation, Relation) for equation in equations):
        return Unsupported("a brace over rows that are not all relations and conditions")
    return Items("list", equations)


def _piecewise_or_labelled(text: str, depth: int) -> Form:
    wrapped = enclosing(text)
    if wrapped is not None and wrapped[0] == "\\begin{cases}":
        return _environment(text, depth)
    parts = split_top(text, _RELATION)
    if len(parts) == 2 and parts[1][1] == "=" and "\\begin{cases}" not in parts[0][0]:
        body = parts[1][0].strip()
        wrapped = enclosing(body)
        if wrapped is not None and wrapped[0] == "\\begin{cases}":
            return Relation((_single(parts[0][0].strip(), depth + 1), _environment(body, depth)), ("=",))
    return Unsupported("a piecewise function inside an expression")


# -- labels ----------------------------------------------------------------------------------

_GREEK = (
    "alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi"
    "|rho|sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Sigma|Phi|Psi|Omega"
)
_DECORATION = r"\\(?:mathbf|vec|boldsymbol|bm|overrightarrow|overline|mathit|hat|bar|tilde|mathcal)"
_LABEL = re.compile(
    rf"(?:{_DECORATION}\s*(?:\{{\s*(?:[A-Za-z]|\\(?:{_GREEK}))\s*\}}|\s[A-Za-z])|[A-Za-z]|\\(?:{_GREEK}))"
    r"(?:_\s*(?:\{[^{}]*\}|\w))?\s*(?:'+|\^\s*\{\s*\\prime\s*\})?(?:\^\s*\{\s*-1\s*\})?"
    r"(?:\s*\((?:[^()]|\([^()]*\))*\))?"
)
_NOT_LABELS = {"e", "i"}


def label_key(form: Form | None) -> str | None:
    """A canonical spelling when ``form`` names something (``x``, ``f(x)``, ``\\mathbf{y}``,
    ``a_{n}``, ``(x, y)``); None for anything else (numbers, expressions, ``e``, ``i``)."""
    if isinstance(form, Items) and form.kind in ("pair", "tuple"):
        keys = [label_key(item) for item in form.items]
        return None if None in keys else "(" + ",".join(keys) + ")"  # type: ignore[arg-type]
    if not isinstance(form, Leaf):
        return None
    text = form.latex.strip()
    if _LABEL.fullmatch(text) is None:
        return None
    key = re.sub(rf"{_DECORATION}\s*(?:\{{\s*([^{{}}]*)\}}|\s([A-Za-z]))", r"\1\2", text)
    key = re.sub(r"[\s{}]", "", key)
    return None if key in _NOT_LABELS else key


def expression_key(form: Form | None) -> str | None:
    """Spelling of an expression with brackets and spacing dropped (``\\cos(\\pi)`` and
    ``\\cos \\pi`` agree): how the parts of ``\\cos(\\pi)=-1, \\sin(\\pi)=0`` are told apart."""
    if not isinstance(form, Leaf):
        return None
    return re.sub(r"[\s{}()\[\]]", "", form.latex)
