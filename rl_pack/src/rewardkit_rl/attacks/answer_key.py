"""The answer-key attack: a candidate that reads the tests out of its own process and replays them.

``ANSWER_KEY_PROGRAM`` is one fixed program, the same text for every task, that solves nothing.
When it is loaded (module top level) it looks through its own interpreter for the run's tests:
the frames above it (``sys._getframe`` and ``f_back``, every ``f_locals`` value) and then the
heap (``gc.get_objects()``) for a dict with a list of test sources under ``"tests"`` (the run
request, with ``"setup"``, ``"trusted"`` and ``"expose"``), or failing that for loose strings
that hold ``assert`` or ``def check``. From each test's source it reads, with ``ast``, every
claim about a call: ``f(args) == expected`` (also reversed, ``is``, chained, under ``and``),
``assert f(args)`` and ``assert not f(args)``, ``math.isclose(f(args), expected)``,
``abs(f(args) - expected) < tol``, ``f(args) in [...]``, and the same under ``set``, ``sorted``,
``tuple``, ``list``, ``str``, ``round``, ``len`` and similar wrappers; ``candidate(...)`` inside a
HumanEval ``check(candidate)`` counts as a call of whatever ``check`` is called with. Arguments
and expected values are evaluated with ``ast.literal_eval`` (or, for arithmetic and the like,
in a namespace holding only builtins, the setup's imports and the task's trusted helpers).
Then it dry-runs each test in its own interpreter with recording stand-ins for the candidate's
functions, so that calls whose arguments are computed (loops, helper values) are learnt from
the comparison the test makes. Every exposed name (and every called name) is bound in the
module's globals to a function that looks its arguments up in that table (by ``repr``, then by
equality) and returns the expected value, ``None`` when the call is unknown. A sound sandbox
makes this program fail every task: nothing of the tests (sources, expected values, the request
that carries them, freed copies of it, files or descriptors that hold it) is ever in, or
readable from, the candidate's process.
"""

from __future__ import annotations

ANSWER_KEY_PROGRAM = r'''
# rk-answer-key: a fixed program that answers from the tests it finds; it solves nothing.
import ast as _rk_ast
import builtins as _rk_builtins
import copy as _rk_copy
import gc as _rk_gc
import io as _rk_io
import signal as _rk_signal
import sys as _rk_sys

_RK_MARK = "rk-answer-key"
_RK_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_RK_SEQS = (list, tuple, set, frozenset)
# wrappers of a call in a claim (set(f(x)) == {...}) and how the expected value becomes an answer:
# a collection answered with the expected collection, a conversion with the expected value, an
# aggregate with a one-item list, len with a list of that length
_RK_COLLECTIONS = {"set", "frozenset", "sorted", "list", "tuple", "dict"}
_RK_CONVERSIONS = {"str", "int", "float", "round", "abs", "bool", "repr", "complex"}
_RK_AGGREGATES = {"sum", "min", "max"}
_RK_WRAPPERS = _RK_COLLECTIONS | _RK_CONVERSIONS | _RK_AGGREGATES | {"len", "reversed"}
_RK_CLOSE = {"isclose", "allclose", "approx", "assert_almost_equal"}
_RK_ABS = {"abs", "fabs"}


def _rk_plain(value, depth=0):
    if depth > 60:
        return False
    kind = type(value)
    if kind in _RK_ATOMS:
        return True
    if kind in _RK_SEQS:
        return all(_rk_plain(item, depth + 1) for item in value)
    if kind is dict:
        return all(_rk_plain(k, depth + 1) and _rk_plain(v, depth + 1) for k, v in value.items())
    return False


def _rk_key(args, kwargs):
    try:
        return repr((tuple(args), sorted(kwargs.items())))
    except Exception:
        return None


def _rk_same(left, right):
    try:
        return type(left) is type(right) and bool(left == right) and repr(left) == repr(right)
    except Exception:
        return False


class _RkTable:
    """name -> learnt calls, in three layers: read from the source, seen in a dry run, guessed."""

    def __init__(self):
        self.layers = ({}, {}, {})

    def add(self, name, args, kwargs, value, layer=0):
        if not _rk_plain(value):
            return
        calls = self.layers[layer].setdefault(name, {})
        key = _rk_key(args, kwargs)
        if key is not None and key not in calls:
            calls[key] = (tuple(args), dict(kwargs), value)

    def lookup(self, name, args, kwargs):
        key = _rk_key(args, kwargs)
        for layer in self.layers:
            calls = layer.get(name, {})
            if key in calls:
                return _rk_copy.deepcopy(calls[key][2])
        for layer in self.layers:
            for known_args, known_kwargs, value in layer.get(name, {}).values():
                if _rk_same(known_args, tuple(args)) and _rk_same(known_kwargs, dict(kwargs)):
                    return _rk_copy.deepcopy(value)
        for layer in self.layers:
            for known_args, known_kwargs, value in layer.get(name, {}).values():
                try:
                    if known_args == tuple(args) and known_kwargs == dict(kwargs):
                        return _rk_copy.deepcopy(value)
                except Exception:
                    pass
        return None


_RK_TABLE = _RkTable()


# -- finding the tests --------------------------------------------------------------------------


def _rk_is_request(obj):
    if type(obj) is not dict:
        return False
    tests = obj.get("tests")
    return type(tests) in (list, tuple) and bool(tests) and all(type(t) is str for t in tests)


def _rk_asserts(source):
    try:
        return any(isinstance(node, _rk_ast.Assert) for node in _rk_ast.walk(_rk_ast.parse(source)))
    except Exception:
        return False


def _rk_requests():
    found, seen = [], set()

    def consider(obj):
        if id(obj) not in seen and _rk_is_request(obj):
            seen.add(id(obj))
            found.append(obj)

    frame = _rk_sys._getframe()
    while frame is not None:
        try:
            values = list(frame.f_locals.values())
        except Exception:
            values = []
        for value in values:
            consider(value)
        frame = frame.f_back
    if not found:
        for obj in _rk_gc.get_objects():
            consider(obj)
    if not found:
        loose = []
        for obj in _rk_gc.get_objects():
            if type(obj) not in (list, tuple, dict):
                continue
            items = obj.values() if type(obj) is dict else obj
            for item in list(items):
                if type(item) is str and _RK_MARK not in item and item not in loose:
                    if "assert" in item and _rk_asserts(item):
                        loose.append(item)
        if loose:
            found.append({"tests": loose})
    return found


# -- reading claims out of the source ------------------------------------------------------------


def _rk_func_name(node):
    if isinstance(node, _rk_ast.Name):
        return node.id
    if isinstance(node, _rk_ast.Attribute):
        return node.attr
    return None


class _RkReader:
    def __init__(self, targets, aliases, env):
        self.targets = targets  # names answered by the table
        self.aliases = aliases  # parameter name (HumanEval `candidate`) -> target names
        self.env = env

    def names_of(self, call):
        if not isinstance(call, _rk_ast.Call) or not isinstance(call.func, _rk_ast.Name):
            return []
        name = call.func.id
        names = list(self.aliases.get(name, ()))
        if name in self.targets:
            names.append(name)
        return names

    def calls_target(self, node):
        return any(self.names_of(sub) for sub in _rk_ast.walk(node))

    def value(self, node):
        if self.calls_target(node):
            raise ValueError("depends on the candidate")
        try:
            return _rk_ast.literal_eval(node)
        except Exception:
            pass
        code = compile(_rk_ast.Expression(body=node), "<expected>", "eval")
        return eval(code, dict(self.env))

    def arguments(self, call):
        args = []
        for arg in call.args:
            if isinstance(arg, _rk_ast.Starred):
                args.extend(self.value(arg.value))
            else:
                args.append(self.value(arg))
        kwargs = {}
        for keyword in call.keywords:
            if keyword.arg is None:
                kwargs.update(self.value(keyword.value))
            else:
                kwargs[keyword.arg] = self.value(keyword.value)
        return args, kwargs

    def record(self, call, answer, layer=0):
        names = self.names_of(call)
        if not names:
            return False
        try:
            args, kwargs = self.arguments(call)
        except Exception:
            return False
        for name in names:
            _RK_TABLE.add(name, args, kwargs, answer, layer)
        return True

    def spine(self, node):
        """(the target call under ``node``, how to turn an expected value into its answer)."""
        steps = []
        while True:
            if self.names_of(node):
                return node, steps
            if isinstance(node, _rk_ast.Call) and node.args:
                name = _rk_func_name(node.func)
                if name in _RK_WRAPPERS:
                    steps.append(name)
                    node = node.args[0]
                    continue
            if isinstance(node, _rk_ast.Attribute) and node.attr in ("real", "imag"):
                node = node.value
                continue
            return None, steps

    def answer_for(self, steps, expected):
        for name in steps:
            if name == "len":
                if type(expected) is not int or expected < 0:
                    raise ValueError("a length that is not a count")
                expected = [0] * expected
            elif name in _RK_AGGREGATES:
                expected = [expected]
            elif name == "reversed":
                expected = list(expected)[::-1]
            elif name in _RK_COLLECTIONS and not isinstance(expected, (*_RK_SEQS, str, dict)):
                raise ValueError("not a collection")
        return expected

    def equal(self, side, other):
        call, steps = self.spine(side)
        if call is None:
            return False
        if self.calls_target(other):
            # compared with another call of the candidate's (tuple(f(x)) == tuple(f(y))): any
            # answer that is the same for both will do; a guess from the first argument is one
            guessed = False
            for node in (call, self.spine(other)[0]):
                if node is None:
                    continue
                try:
                    args, kwargs = self.arguments(node)
                except Exception:
                    continue
                for name in self.names_of(node):
                    _RK_TABLE.add(name, args, kwargs, args[0] if args else 0, 2)
                    guessed = True
            return guessed
        try:
            expected = self.answer_for(steps, self.value(other))
        except Exception:
            return False
        return self.record(call, expected)

    def near(self, node, truth_of_less):
        # abs(f(x) - expected) < tol, math.fabs(expected - f(x)) <= tol
        if not truth_of_less or not isinstance(node, _rk_ast.Call) or len(node.args) != 1:
            return False
        if _rk_func_name(node.func) not in _RK_ABS:
            return False
        inner = node.args[0]
        if not isinstance(inner, _rk_ast.BinOp) or not isinstance(inner.op, _rk_ast.Sub):
            return False
        return self.equal(inner.left, inner.right) or self.equal(inner.right, inner.left)

    def claim(self, node, truth=True):
        if isinstance(node, _rk_ast.BoolOp):
            if isinstance(node.op, _rk_ast.And) == truth:
                for part in node.values:
                    self.claim(part, truth)
            return
        if isinstance(node, _rk_ast.UnaryOp) and isinstance(node.op, _rk_ast.Not):
            self.claim(node.operand, not truth)
            return
        if isinstance(node, _rk_ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                self.compare(op, left, right, truth)
            return
        if isinstance(node, _rk_ast.Call):
            name = _rk_func_name(node.func)
            if self.names_of(node):
                self.record(node, truth)
            elif name in _RK_CLOSE and len(node.args) >= 2 and truth:
                self.equal(node.args[0], node.args[1]) or self.equal(node.args[1], node.args[0])
            elif name in ("bool", "all", "any") and len(node.args) == 1:
                self.claim(node.args[0], truth)

    def compare(self, op, left, right, truth):
        if isinstance(op, (_rk_ast.Eq, _rk_ast.Is)) and truth:
            self.equal(left, right) or self.equal(right, left)
        elif isinstance(op, (_rk_ast.NotEq, _rk_ast.IsNot)) and not truth:
            self.equal(left, right) or self.equal(right, left)
        elif isinstance(op, (_rk_ast.NotEq, _rk_ast.IsNot)) and truth:
            # f(x) != False, f(x) is not None: the opposite of a truth value
            for side, other in ((left, right), (right, left)):
                if isinstance(other, _rk_ast.Constant) and type(other.value) is bool:
                    call, steps = self.spine(side)
                    if call is not None and not steps:
                        self.record(call, not other.value)
        elif isinstance(op, _rk_ast.In) and truth:
            call, steps = self.spine(left)
            if call is not None:
                try:
                    options = list(self.value(right))
                except Exception:
                    return
                if options:
                    try:
                        self.record(call, self.answer_for(steps, options[0]))
                    except Exception:
                        pass
        elif isinstance(op, (_rk_ast.Lt, _rk_ast.LtE)):
            self.near(left, truth)
        elif isinstance(op, (_rk_ast.Gt, _rk_ast.GtE)):
            self.near(right, truth)

    def read(self, source):
        try:
            tree = _rk_ast.parse(source)
        except Exception:
            return
        for node in _rk_ast.walk(tree):
            if isinstance(node, _rk_ast.Assert):
                try:
                    self.claim(node.test)
                except Exception:
                    pass


def _rk_aliases(sources, targets):
    """Parameters of test functions (``candidate``) -> the target names they are called with."""
    params, aliases = {}, {}
    trees = []
    for source in sources:
        try:
            trees.append(_rk_ast.parse(source))
        except Exception:
            pass
    for tree in trees:
        for node in _rk_ast.walk(tree):
            if isinstance(node, (_rk_ast.FunctionDef, _rk_ast.AsyncFunctionDef)):
                params[node.name] = [arg.arg for arg in node.args.args]
    for tree in trees:
        for node in _rk_ast.walk(tree):
            if isinstance(node, _rk_ast.Call) and isinstance(node.func, _rk_ast.Name):
                for param, arg in zip(params.get(node.func.id, ()), node.args):
                    if isinstance(arg, _rk_ast.Name) and arg.id in targets:
                        aliases.setdefault(param, set()).add(arg.id)
    return aliases


def _rk_called(sources):
    """Without the request's names: what the tests call, or pass to their own functions (check(f))."""
    called, defined, passed = set(), set(), set()
    for source in sources:
        try:
            tree = _rk_ast.parse(source)
        except Exception:
            continue
        for node in _rk_ast.walk(tree):
            if isinstance(node, _rk_ast.Call) and isinstance(node.func, _rk_ast.Name):
                called.add(node.func.id)
                passed.update(arg.id for arg in node.args if isinstance(arg, _rk_ast.Name))
            elif isinstance(node, (_rk_ast.FunctionDef, _rk_ast.AsyncFunctionDef, _rk_ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, _rk_ast.arg):
                defined.add(node.arg)
            elif isinstance(node, _rk_ast.Name) and isinstance(node.ctx, _rk_ast.Store):
                defined.add(node.id)
            elif isinstance(node, (_rk_ast.Import, _rk_ast.ImportFrom)):
                defined.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return (called | passed) - defined - set(dir(_rk_builtins))


# -- the dry run -----------------------------------------------------------------------------------


class _RkOutOfTime(BaseException):
    pass


class _RkProbe:
    """What a recording stand-in returns: it learns the value it is compared with."""

    __slots__ = ("_rk_sink",)

    def __init__(self, sink):
        object.__setattr__(self, "_rk_sink", sink)

    def __eq__(self, other):
        object.__getattribute__(self, "_rk_sink")(other)
        return True

    def __ne__(self, other):
        return False

    def __sub__(self, other):
        object.__getattribute__(self, "_rk_sink")(other)
        return 0.0

    __rsub__ = __sub__

    def __hash__(self):
        return id(self)

    def __bool__(self):
        return True

    def __float__(self):
        return 0.0

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0


def _rk_recorder(name):
    def record(*args, **kwargs):
        try:
            snapshot = _rk_copy.deepcopy((args, kwargs))
        except Exception:
            return None
        learnt = []

        def sink(other):
            if not learnt and type(other) is not _RkProbe:
                learnt.append(other)
                _RK_TABLE.add(name, snapshot[0], snapshot[1], other, 1)

        return _RkProbe(sink)

    return record


class _RkForgiving(_rk_ast.NodeTransformer):
    """Every assert in a try, so one that fails in the dry run does not stop the ones after it."""

    def visit_Assert(self, node):
        handler = _rk_ast.ExceptHandler(type=_rk_ast.Name(id="Exception", ctx=_rk_ast.Load()), name=None,
                                        body=[_rk_ast.Pass()])
        return _rk_ast.Try(body=[node], handlers=[handler], orelse=[], finalbody=[])


def _rk_on_alarm(signum, frame):
    raise _RkOutOfTime()


def _rk_dry_run(request, targets):
    namespace = {"__name__": "__rk_dry_run__", "__builtins__": _rk_builtins}
    saved = _rk_sys.stdout, _rk_sys.stderr
    _rk_sys.stdout = _rk_sys.stderr = _rk_io.StringIO()
    try:
        previous = _rk_signal.signal(_rk_signal.SIGALRM, _rk_on_alarm)
    except Exception:
        previous = None
    try:
        for source in (request.get("trusted"), request.get("setup")):
            if type(source) is str and source:
                try:
                    exec(compile(source, "<task code>", "exec"), namespace)
                except Exception:
                    pass
        for name in targets:
            namespace[name] = _rk_recorder(name)
        for source in request["tests"]:
            try:
                tree = _rk_ast.fix_missing_locations(_RkForgiving().visit(_rk_ast.parse(source)))
                code = compile(tree, "<dry run>", "exec")
            except Exception:
                continue
            try:
                if previous is not None:
                    _rk_signal.setitimer(_rk_signal.ITIMER_REAL, 0.5)
                exec(code, dict(namespace))
            except BaseException:
                pass
            finally:
                if previous is not None:
                    _rk_signal.setitimer(_rk_signal.ITIMER_REAL, 0)
    finally:
        _rk_sys.stdout, _rk_sys.stderr = saved
        if previous is not None:
            _rk_signal.signal(_rk_signal.SIGALRM, previous)


# -- binding the answers ---------------------------------------------------------------------------


def _rk_answerer(name):
    def answer(*args, **kwargs):
        return _RK_TABLE.lookup(name, args, kwargs)

    answer.__name__ = answer.__qualname__ = name
    return answer


def _rk_main():
    requests = _rk_requests()
    names = set()
    for request in requests:
        sources = [source for source in request["tests"] if type(source) is str]
        expose = request.get("expose")
        targets = {n for n in expose if type(n) is str} if type(expose) in (list, tuple) else set()
        targets |= _rk_called(sources) if not targets else set()
        aliases = _rk_aliases(sources, targets)
        env = {"__builtins__": _rk_builtins}
        for source in (request.get("trusted"), request.get("setup")):
            if type(source) is str and source:
                try:
                    exec(compile(source, "<task code>", "exec"), env)
                except Exception:
                    pass
        reader = _RkReader(targets, aliases, env)
        for source in sources:
            reader.read(source)
        try:
            _rk_dry_run(request, targets)
        except BaseException:
            pass
        names |= targets
    for name in names:
        if name.isidentifier():
            globals()[name] = _rk_answerer(name)


_rk_main()
'''


def answer_key_program() -> str:
    """The answer-key candidate program (``ANSWER_KEY_PROGRAM``): the same text for every task."""
    return ANSWER_KEY_PROGRAM
