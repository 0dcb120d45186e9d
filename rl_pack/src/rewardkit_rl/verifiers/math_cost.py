"""Cost guards of the ``math`` verifier: answers whose evaluation would explode, refused before any worker.

SymPy works out integer powers, factorials and binomials exactly and at once (``9^{9^{9^{9}}}``,
``10^{10^{10}}``, ``2^{2^{40}}``, ``(10^6)!``), ``Sum``/``Product.doit`` loops over every term of a
range with more than 100 terms that has no closed form (``\\prod_{k=1}^{10^6} k``,
``\\sum_{k=1}^{300} k!``), math-verify's LaTeX parser backtracks exponentially in nested fractions
(60 nested ``\\frac``) and the numeric evaluation of nested functions grows exponentially with
their depth (``\\sin(\\sin(\\cdots))``). Any of these keeps a worker busy until it is killed. This
module reads the answer's LaTeX once, in the calling process and in well under a millisecond,
without evaluating anything: a small recursive reader estimates, for every node, an upper bound
on ``log10`` of its value and of its exact size (see ``_Reader``) and counts the nestings.
``measure`` gives the largest of each; ``refusal`` compares them with the limits below.

Whatever the reader cannot price counts as expensive: a function it has no estimate for
(``\\operatorname{eye}``, ``\\operatorname{zeros}`` and the other names math-verify's parser turns
into matrix builders or decompositions, any ``\\operatorname`` it does not know), an estimate that
is not a number, or a reader that failed. ``\\Gamma`` and ``\\gamma`` applied to an argument are the
gamma function there, priced as the factorial they are (``\\Gamma(10^7)`` kept a worker busy for
minutes, out of reach of any signal, while this reader took it for a variable).

A limit is never applied to an answer when the reference itself is over it (a reference that
is a tower is compared normally), nor to an answer spelled as the reference (the caller checks
that first). The limits are part of the ``math`` provider's meaning (its revision), and are
documented in docs/verifiers.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Decimal digits of the largest exact number the answer spells (an upper-bound estimate).
# Measured in a worker: 2^{10^6} (301,030 digits) 0.05 s, (10^5)! (456,574 digits) 0.4 s,
# 3^{3*10^6} (1.4 million digits) 1.9 s, 10^{10^7} over 8 s. MATH answers stay under 10,000.
MAX_DIGITS = 100_000
# Terms of a \sum or \prod whose bounds are numbers. SymPy adds up to 100 terms directly; past
# that it tries summation algorithms first: \sum_{k=1}^{300} k! and \sum_{k=1}^{200} k^k take
# over 8 s, \sum_{k=1}^{100} k! 0.2 s.
MAX_TERMS = 100
# Nested \frac (\dfrac, \tfrac, \cfrac): math-verify's parser doubles its time per level;
# 8 levels 0.5 s, 12 levels up to 2.6 s, 20 levels over 8 s.
MAX_FRACTION_NESTING = 8
# Nested named functions (\sin(\sin(..)), \ln, \exp, ...): 5 levels 0.44 s, 6 levels 1.7 s,
# 7 levels 4.3 s (numeric evaluation at 40 digits).
MAX_FUNCTION_NESTING = 5
# Exponents inside exponents (a^{b^{c}} is 2): 8 levels of x^{x^{..}} take 1.9 s.
MAX_TOWER = 6
# Brackets and braces inside one another, whatever they hold.
MAX_NESTING = 20
# Constructs whose cost the reader cannot estimate (see the module docstring): none is allowed.
MAX_UNPRICED = 0
# The reader stops at this many brackets, or this many constructs, inside one another (bounded
# recursion); an answer that deep is reported that deep, over MAX_NESTING.
_READ_LIMIT = 60
_CALL_LIMIT = 200

_LOG2 = math.log10(2)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_TOKEN = re.compile(r"\\[a-zA-Z]+\*?|\\.|[0-9]+(?:\.[0-9]*)?|\.[0-9]+|!!|\s+|.", re.DOTALL)
_DIGITS = re.compile(r"[0-9]+")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")
_DOUBLED_COMMAND = re.compile(r"\\\\(?=[a-zA-Z])")
# Thousands separators (1{,}000, 1,\!000, 1,000) join the digits: 10^{10{,}000{,}000} is 10^{10^7}.
_THOUSANDS = re.compile(r"(?<=[0-9])(?:\{,\}|,\\!|,)(?=[0-9]{3}(?![0-9]))")
# Dropped before reading: sizing, spacing and style commands, which hold no value.
_IGNORED = _words(
    r"\left \right \big \Big \bigg \Bigg \bigl \bigr \Bigl \Bigr \biggl \biggr \Biggl \Biggr \middle"
    r" \displaystyle \textstyle \scriptstyle \limits \nolimits \, \; \: \! \quad \qquad"
) | {"\\ "}
_OPENERS = _words(r"{ ( [ \{ \langle \lfloor \lceil \lvert \lVert")
_CLOSERS = _words(r"} ) ] \} \rangle \rfloor \rceil \rvert \rVert")
_SEPARATORS = _words(
    r", ; = < > & | : \\ \le \ge \leq \geq \ne \neq \approx \in \notin \cup \cap \to \mid \setminus"
    r" \equiv \pmod \bmod \lor \land \vee \wedge \implies \iff \Rightarrow \rightarrow \sim \cong"
    r" \subset \subseteq \supset \supseteq \leqslant \geqslant \lt \gt"
)
_ADDITIVE = _words(r"+ - \pm \mp")
_MULTIPLICATIVE = _words(r"* / \cdot \times \div \ast")
_FRACTIONS = _words(r"\frac \dfrac \tfrac \cfrac")
_BINOMIALS = _words(r"\binom \dbinom \tbinom")
_FUNCTIONS = _words(
    r"\sin \cos \tan \cot \sec \csc \arcsin \arccos \arctan \arccot \arcsec \arccsc \sinh \cosh"
    r" \tanh \coth \sech \csch \log \ln \lg \exp \det \gcd \max \min \arg \deg"
)
# Functions whose value is one of their arguments' (the others' value is bounded or stays symbolic).
_VALUE_FUNCTIONS = _words(r"\det \gcd \max \min")
_BIG_OPERATORS = _words(r"\sum \prod")
_LIMITS = _words(r"\lim \int \iint \iiint \oint \limsup \liminf \sup \inf")
# Words, not math: their group is skipped (the workers compare \text{} as text or drop it).
_OPAQUE = _words(r"\text \textrm \textbf \textit \textsf \texttt \textup \textnormal \mbox \begin \end")
# \operatorname{name}: the names priced as the function of that name (math-verify's parser reads
# \operatorname{floor}, \operatorname{ceil}, gcd and lcm as those functions, the hyperbolic ones
# as the hyperbolic functions); any other name is not priced (see the module docstring).
_OPERATOR_NAMES = frozenset(name[1:] for name in _FUNCTIONS) | _words(
    "floor ceil lcm arsinh arcosh artanh arcsinh arccosh arctanh"
)
_OPERATOR_VALUE_NAMES = _words("gcd lcm max min floor ceil")
# The gamma function when an argument follows (math-verify's parser): (n-1)! is at most n log10 n digits.
_GAMMA = _words(r"\Gamma \gamma")
_CONSTANTS = _words(r"\pi \circ \% \infty \prime \degree")


class _TooDeep(Exception):
    pass


_Node = tuple[float, float, bool]
_NOTHING: _Node = (0.0, 0.0, False)
_VARIABLE: _Node = (0.0, 1.0, True)


@dataclass(frozen=True, slots=True)
class Cost:
    """The largest of each measure in one answer (see the module docstring and the limits)."""

    digits: float = 0.0
    terms: float = 0.0
    fractions: int = 0
    functions: int = 0
    tower: int = 0
    nesting: int = 0
    unpriced: int = 0
    unpriced_what: str = ""  # the first construct not priced, for the reason


def _tokens(latex: str) -> list[str]:
    if "\\begin" not in latex and "\\\\" in latex:
        latex = _DOUBLED_COMMAND.sub(r"\\", latex)  # \\frac from an escaped string, as the workers read it
    found: list[str] = []
    after_size = False
    for token in _TOKEN.findall(_THOUSANDS.sub("", latex)):
        if token.isspace():
            continue
        if token in _IGNORED:
            after_size = token in (r"\left", r"\right")
            continue
        if token == "." and after_size:  # \left. and \right. are no bracket
            after_size = False
            continue
        after_size = False
        if _DIGITS.fullmatch(token) and found and _DIGITS.fullmatch(found[-1]):
            found[-1] += token  # 1\,000\,000 is one number
            continue
        found.append(token)
    return found


def _bound(s: float) -> float:
    """An upper bound of a value whose ``log10`` is at most ``s``."""
    return math.inf if s > 300 else 10.0**s


def _integer(token: str | None) -> int | None:
    return int(token) if token is not None and _DIGITS.fullmatch(token) and len(token) < 20 else None


class _Reader:
    """Recursive reader. Each ``_x`` method returns ``(value, size, variable)`` of what it read:
    ``value`` bounds ``log10`` of its absolute value with every variable as 1 (the sample points
    the leaves are compared at are below 1), ``size`` bounds ``log10`` of its exact numerator and
    denominator with every variable as 10 (a sample point is a small fraction, so a power of a
    variable costs what a power of 10 costs), and ``variable`` says whether a variable occurs."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.bound: dict[str, float] = {}  # index of an enclosing \sum/\prod -> log10 of its range
        self.digits = 0.0
        self.terms = 0.0
        self.depth = self.fractions = self.functions = self.tower = self.calls = 0
        self.max_depth = self.max_fractions = self.max_functions = self.max_tower = 0
        self.unpriced = 0
        self.unpriced_what = ""

    def peek(self, ahead: int = 0) -> str | None:
        index = self.pos + ahead
        return self.tokens[index] if index < len(self.tokens) else None

    def read(self) -> None:
        while self.pos < len(self.tokens):
            self.expression()
            if self.peek() in _CLOSERS:
                self.pos += 1  # a stray closer

    def note(self, found: _Node) -> _Node:
        # An estimate that is not a number (inf * 0 in a product over a huge range) prices nothing:
        # it counts as infinite.
        size = math.inf if math.isnan(found[1]) else found[1]
        if size > self.digits:
            self.digits = size
        return found

    def not_priced(self, what: str) -> _Node:
        """A construct this reader has no estimate for (counted; it makes the answer refused)."""
        self.unpriced += 1
        self.unpriced_what = self.unpriced_what or what
        return _VARIABLE

    def expression(self) -> _Node:
        value, size, variable = 0.0, 0.0, False
        while True:
            part = self.additive()
            value, size, variable = max(value, part[0]), max(size, part[1]), variable or part[2]
            token = self.peek()
            if token is None or token in _CLOSERS:
                return value, size, variable
            self.pos += 1  # a separator

    def additive(self) -> _Node:
        found: _Node | None = None
        while True:
            token = self.peek()
            if token is None or token in _CLOSERS or token in _SEPARATORS:
                return found or _NOTHING
            if token in _ADDITIVE:
                self.pos += 1
                continue
            term = self.product()
            if found is None:
                found = term
            else:
                found = self.note(
                    (max(found[0], term[0]) + _LOG2, found[1] + term[1] + _LOG2, found[2] or term[2])
                )

    def product(self) -> _Node:
        value, size, variable = 0.0, 0.0, False
        while True:
            token = self.peek()
            if token is None or token in _CLOSERS or token in _SEPARATORS or token in _ADDITIVE:
                return value, size, variable
            if token in _MULTIPLICATIVE:
                self.pos += 1
                continue
            factor = self.power()
            value, size, variable = value + factor[0], size + factor[1], variable or factor[2]
            self.note((value, size, variable))

    def power(self) -> _Node:
        value, size, variable = self.primary()
        while True:
            token = self.peek()
            if token == "^":
                self.pos += 1
                exponent = self.superscript()
                times = _bound(exponent[0])
                value = 0.0 if value == 0 else value * times
                size = 0.0 if size == 0 else size * times
                variable = variable or exponent[2]
            elif token == "_":
                self.pos += 1
                self.argument()
            elif token in ("!", "!!"):
                self.pos += 1
                value, size, variable = self.factorial((value, size, variable))
            elif token == "'":
                self.pos += 1
            else:
                return self.note((value, size, variable))
            self.note((value, size, variable))

    def superscript(self) -> _Node:
        self.tower += 1
        self.max_tower = max(self.max_tower, self.tower)
        try:
            return self.argument()
        finally:
            self.tower -= 1

    def argument(self) -> _Node:
        token = self.peek()
        if token is None or token in _CLOSERS or token in _SEPARATORS:
            return _NOTHING
        return self.primary()

    def group(self) -> _Node:
        """After an opener: what is inside, up to and with its closer."""
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        if self.depth > _READ_LIMIT:
            raise _TooDeep
        try:
            found = self.expression()
        finally:
            self.depth -= 1
        if self.peek() in _CLOSERS:
            self.pos += 1
        return found

    def skip_group(self) -> None:
        """Skip a ``{...}`` group without reading it (words)."""
        if self.peek() != "{":
            return
        level = 0
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            self.pos += 1
            level += token == "{"
            level -= token == "}"
            if level == 0:
                return

    def primary(self) -> _Node:
        self.calls += 1
        if self.calls > _CALL_LIMIT:
            raise _TooDeep
        try:
            return self._primary()
        finally:
            self.calls -= 1

    def _primary(self) -> _Node:
        token = self.tokens[self.pos]
        self.pos += 1
        if _NUMBER.fullmatch(token):
            whole = token.partition(".")[0].lstrip("0")
            if len(whole) > 15:
                return float(len(whole)), float(len(whole)), False
            number = float(token)
            value = math.log10(number) if number > 1 else 0.0
            return value, value, False
        if token in _OPENERS:
            return self.group()
        if token in _FRACTIONS:
            self.fractions += 1
            self.max_fractions = max(self.max_fractions, self.fractions)
            try:
                top, bottom = self.argument(), self.argument()
            finally:
                self.fractions -= 1
            return self.note((top[0] + bottom[0], top[1] + bottom[1], top[2] or bottom[2]))
        if token == r"\sqrt":
            if self.peek() == "[":
                self.pos += 1
                self.group()
            return self.argument()
        if token in _BINOMIALS:
            top, bottom = self.argument(), self.argument()
            # C(n, k) <= 2^n and <= n^k
            value = min(_bound(top[0]) * _LOG2, top[0] * _bound(bottom[0]))
            return self.note((value, value, top[2] or bottom[2]))
        if token in _FUNCTIONS:
            while self.peek() in ("^", "_"):
                self.pos += 1
                self.superscript() if self.tokens[self.pos - 1] == "^" else self.argument()
            self.functions += 1
            self.max_functions = max(self.max_functions, self.functions)
            try:
                inside = self.argument()
            finally:
                self.functions -= 1
            return inside if token in _VALUE_FUNCTIONS else (0.0, 1.0 if inside[2] else 0.0, inside[2])
        if token in _BIG_OPERATORS:
            return self.big_operator(token)
        if token in _LIMITS:
            while self.peek() in ("^", "_"):
                self.pos += 1
                self.argument()
            return 0.0, 1.0, True
        if token in _OPAQUE:
            self.skip_group()
            return _NOTHING
        if token in (r"\operatorname", r"\operatorname*"):
            return self.operator_name()
        if token in _GAMMA and self.peek() not in (
            None,
            *_CLOSERS,
            *_SEPARATORS,
            *_ADDITIVE,
            *_MULTIPLICATIVE,
        ):
            return self.factorial(self.argument() if self.peek() in _OPENERS else self.power())
        if token in _CONSTANTS:
            return 0.0, 0.0, token == r"\infty"
        if token.isalpha() or token.startswith("\\"):
            if token in self.bound:
                return self.bound[token], self.bound[token], False
            return _VARIABLE  # a variable (or a command read as one)
        return _NOTHING

    def factorial(self, argument: _Node) -> _Node:
        """n! (and the gamma function): at most n log10 n digits."""
        count = _bound(argument[0])
        value = count * math.log10(count) if count > 1 else 0.0
        return self.note((value, value, argument[2]))

    def operator_name(self) -> _Node:
        """``\\operatorname{name}``: a function it prices, else a construct it cannot price."""
        start = self.pos
        self.skip_group()
        name = "".join(self.tokens[start + 1 : self.pos - 1])
        if name not in _OPERATOR_NAMES:
            return self.not_priced(f"\\operatorname{{{name}}}")
        self.functions += 1
        self.max_functions = max(self.max_functions, self.functions)
        try:
            inside = self.argument()
        finally:
            self.functions -= 1
        return inside if name in _OPERATOR_VALUE_NAMES else (0.0, 1.0 if inside[2] else 0.0, inside[2])

    def big_operator(self, token: str) -> _Node:
        name, low, high = None, None, None
        high_value, high_variable, low_variable = 0.0, True, True
        while self.peek() in ("^", "_"):
            mark = self.tokens[self.pos]
            self.pos += 1
            if mark == "_":
                if self.peek() == "{" and self.peek(2) == "=":
                    name = self.peek(1)
                    low = _integer(self.peek(3)) if self.peek(4) == "}" else None
                    self.pos += 3
                    self.depth += 1
                    try:
                        low_variable = self.expression()[2]
                    finally:
                        self.depth -= 1
                    if self.peek() in _CLOSERS:
                        self.pos += 1
                else:
                    self.argument()
            else:
                high = _integer(self.peek(1) if self.peek() == "{" and self.peek(2) == "}" else self.peek())
                high_value, _, high_variable = self.superscript()
        terms = None
        if low is not None and high is not None:
            terms = float(max(high - low + 1, 0))
        elif not high_variable and not low_variable:
            terms = _bound(high_value) + 1
        if terms is not None:
            self.terms = max(self.terms, math.inf if math.isnan(terms) else terms)
        saved = self.bound.get(name) if name is not None else None
        if name is not None:
            self.bound[name] = 0.0 if high_variable else high_value
        try:
            value, size, variable = self.product()
        finally:
            if name is not None:
                if saved is None:
                    self.bound.pop(name, None)
                else:
                    self.bound[name] = saved
        if terms is None:
            return self.note((value, size, variable))
        if token == r"\prod":
            return self.note((value * terms, size * terms, variable))
        spread = math.log10(terms) if terms > 1 else 0.0
        return self.note((value + spread, size + spread, variable))


def measure(latex: str) -> Cost:
    """The cost measures of one answer or reference (no SymPy, no parsing by math-verify)."""
    reader = _Reader(_tokens(latex))
    try:
        reader.read()
    except (_TooDeep, RecursionError):  # RecursionError: called from a deep stack already
        reader.max_depth = max(reader.max_depth, _READ_LIMIT + 1)
    except Exception as error:  # a reader that failed priced nothing: that counts as expensive
        reader.not_priced(f"text this reader failed on ({type(error).__name__})")
    return Cost(
        digits=reader.digits,
        terms=reader.terms,
        fractions=reader.max_fractions,
        functions=reader.max_functions,
        tower=reader.max_tower,
        nesting=reader.max_depth,
        unpriced=reader.unpriced,
        unpriced_what=reader.unpriced_what,
    )


# (measure, limit, what it says) in the order they are reported.
_RULES: tuple[tuple[str, float, str], ...] = (
    ("digits", MAX_DIGITS, "it spells a number of {value} digits (limit {limit:,})"),
    ("terms", MAX_TERMS, "it sums or multiplies {value} terms (limit {limit:,})"),
    ("fractions", MAX_FRACTION_NESTING, "it nests {value} fractions (limit {limit})"),
    ("functions", MAX_FUNCTION_NESTING, "it nests {value} functions (limit {limit})"),
    ("tower", MAX_TOWER, "it nests {value} exponents (limit {limit})"),
    ("nesting", MAX_NESTING, "it nests {value} brackets (limit {limit})"),
    ("unpriced", MAX_UNPRICED, "its cost cannot be estimated: it uses {what}"),
)


# The limits as one string: part of the ``math`` provider's semantic identity.
COST_LIMITS = (
    f"digits<={MAX_DIGITS}, terms<={MAX_TERMS}, fractions<={MAX_FRACTION_NESTING}, "
    f"functions<={MAX_FUNCTION_NESTING}, tower<={MAX_TOWER}, nesting<={MAX_NESTING}, "
    f"unpriced<={MAX_UNPRICED}; gamma priced as n!; unknown \\operatorname unpriced"
)


def _spell(value: float) -> str:
    if math.isinf(value):
        return "more than 10^300"
    return f"about {value:.1e}" if value >= 1e6 else f"about {value:,.0f}"


def refusal(reference: Cost, answer: Cost) -> str | None:
    """Why the answer is refused unevaluated (None when it is not): a measure over its limit
    that the reference is not over. A measure that is not a number is over every limit."""
    for name, limit, said in _RULES:
        value = getattr(answer, name)
        if not value <= limit and getattr(reference, name) <= limit:
            spelled = _spell(value) if name in ("digits", "terms") else str(value)
            why = said.format(value=spelled, limit=limit, what=answer.unpriced_what)
            if name == "unpriced":
                return f"refused unevaluated, counted as expensive: {why}"
            return f"refused unevaluated, its evaluation would explode: {why}"
    return None
