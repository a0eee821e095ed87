"""Program text -> AST (`fcl.syntax.ast`), or a located `ParseError`.

The grammar (`grammar.GRAMMAR`) recognises the text; `_Builder`, a
parse-tree visitor without side effects, turns the parse tree into
AST nodes, removing the sugar listed in `ast`'s docstring and resolving
operator precedence (language.md section 3).  When the grammar fails,
`_diagnose` turns the furthest failure point into a message that says what
was expected and what was found.  Nothing but `ParseError` escapes.

Not done here: `include` expansion (`loader.py`), name resolution, types.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass

import regex
from parsimonious import Grammar
from parsimonious.exceptions import ParseError as _PParseError
from parsimonious.expressions import Quantifier

from fcl.base.errors import CompilerBug, FCLError, ParseError, ParseErrorList, Source, Span
from fcl.base.hw import LEVEL_BY_NAME
from fcl.base.operators import BY_SPELLING
from fcl.base.recursion import deep_recursion
from fcl.syntax import ast as A
from fcl.syntax.grammar import GRAMMAR, KEYWORDS, LEVEL_KEYWORDS, TRIVIA, _DEFINE, _TRIVIA

# closing parentheses (with comments and white space between) after an argument
_CLOSING_PARENS = regex.compile(_DEFINE + r"(?:" + _TRIVIA + r"\))*")


@functools.cache
def _grammar() -> Grammar:
    """The compiled grammar, built on the first parse (about 50 ms): a process whose files
    all come from the parse cache (fcl/syntax/cache.py) never builds it."""
    return Grammar(GRAMMAR)

INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1
FLOAT_MAX = 3.4028234663852886e38
BASE_TYPES = ("int", "float", "double", "bool")
LEVEL_NAMES = tuple(LEVEL_BY_NAME)   # the level keywords and Z

# Binary operators: precedence (higher binds tighter) and associativity.
# `|>` and `.` (function composition) are the operators of functions; the rest are
# fcl.base.operators's
PRECEDENCE = {"|>": 1, **{s: op.precedence for s, op in BY_SPELLING.items()}, ".": 9}
RIGHT_ASSOC = frozenset({"."})
NON_ASSOC = frozenset(s for s, op in BY_SPELLING.items() if op.kind == "compare")


# ---------------------------------------------------------------- public API

def parse_program(text: str, name: str = "<string>") -> A.Program:
    """Program text -> `ast.Program` (includes not expanded), or ParseError.

    After a syntax error the parse resumes at the next declaration keyword
    (`fun`, `sig`, `val`, `include`) at the start of a line, so that every
    independent error is found: several raise one ParseErrorList, in order."""
    try:
        return _parse("program", text, name)
    except ParseError as first:
        later = _later_errors(text, name, first)
        if not later:
            raise
        raise ParseErrorList([first] + later) from None


_DECL_KEYWORDS = frozenset({"fun", "sig", "val", "include"})


def _later_errors(text: str, name: str, error: ParseError) -> list[ParseError]:
    """The syntax errors after `error`: the text is parsed again from each declaration
    keyword at column 1 after the last error (the text before it blanked, so lines and
    columns stay), until a parse reaches the end."""
    starts = []
    for lx in _lex(text):
        if lx.text == "(*":         # an unclosed comment: the rest is comment
            break
        if lx.text in _DECL_KEYWORDS and (lx.start == 0 or text[lx.start - 1] == "\n"):
            starts.append(lx.start)
    source, out, pos = Source(name, text), [], 0
    while error.span is not None:
        pos = next((s for s in starts if s >= error.span.start and s > pos), None)
        if pos is None:
            break
        try:
            _parse("program", regex.sub(r"[^\n]", " ", text[:pos]) + text[pos:], name)
            break
        except ParseError as e:
            error = _relocated(e, source)
            out.append(error)
    return out


def _relocated(error: ParseError, source: Source) -> ParseError:
    """`error` with its spans in `source` (the same text where they point)."""
    def move(span):
        return Span(source, span.start, span.end) if span is not None else None
    return ParseError(error.message, move(error.span), error.notes,
                      [(text, move(span)) for text, span in error.related])


def parse_expr(text: str, name: str = "<string>") -> A.Expr:
    """Expression text (REPL input, argument literal) -> `ast.Expr`."""
    return _parse("expr_top", text, name)


def parse_scheme(text: str, name: str = "<string>") -> A.SchemeAst:
    """Type scheme text (`forall <l> 'a. t` or a type) -> `ast.SchemeAst`."""
    return _parse("scheme_top", text, name)


def _parse(rule: str, text: str, name: str):
    """Run one entry rule of the grammar and build its AST; only ParseError escapes."""
    source = Source(name, text)
    try:
        with deep_recursion():
            tree = _match(rule, source)
            return _Builder(source).visit(tree)
    except FCLError:
        raise
    except RecursionError:
        raise ParseError("the text is nested too deeply to parse", Span(source, 0, 0)) from None
    except CompilerBug:
        raise
    except Exception as exc:  # parsimonious internals: never shown as a traceback
        raise CompilerBug(f"parser failed on {name}: {exc!r}") from exc


# ---------------------------------------------------------------- running the grammar

class _FailureLog(_PParseError):
    """Parsimonious's error record, extended to keep every rule that failed
    at the furthest position (parsimonious keeps only one)."""

    def __init__(self, text: str):
        self._pos = -1
        self._pending = None
        self.failed: set[str] = set()
        super().__init__(text)

    @property
    def expr(self):
        return None  # makes parsimonious report every failing expression

    @expr.setter
    def expr(self, value):
        self._pending = value

    @property
    def pos(self) -> int:
        return self._pos

    @pos.setter
    def pos(self, value: int):
        name = getattr(self._pending, "name", "") or ""
        if not name and isinstance(self._pending, Quantifier):
            # at the end of the text a quantifier fails without trying its member
            name = getattr(self._pending.members[0], "name", "") or ""
        if value > self._pos:
            self._pos, self.failed = value, set()
        if value == self._pos and name:
            self.failed.add(name)


def _match(rule: str, source: Source):
    """Source -> parsimonious parse tree of `rule`, or a ParseError built by `_diagnose`.

    The first attempt records nothing; only a failing text is parsed again
    with the (slower) `_FailureLog` to find out what was expected."""
    expr = _grammar()[rule]
    tree = expr.match_core(source.text, 0, defaultdict(dict), _PParseError(source.text))
    if tree is not None:
        return tree
    log = _FailureLog(source.text)
    if expr.match_core(source.text, 0, defaultdict(dict), log) is not None:
        raise CompilerBug("the grammar accepted a text on its second attempt only")
    raise _diagnose(source, max(log.pos, 0), log.failed)


# ---------------------------------------------------------------- parse tree -> AST

@dataclass(frozen=True)
class _Tok:
    """A token's text and span (without the white space after it)."""
    text: str
    span: Span


@dataclass(frozen=True)
class _LevelBinder:
    """`<name>` in a binding position; span covers the brackets."""
    name: str
    span: Span


@dataclass(frozen=True)
class _LevelArg:
    """`<level>` in an application; span covers the brackets."""
    level: A.LevelAst
    span: Span


def _first(self, node, children):
    """Pass-through rule (a choice): its only child's value."""
    return children[0]


class _Builder:
    """Parse tree -> AST for one Source; pure apart from raising ParseError."""

    _methods: dict = {}         # rule name -> the visit_ method of its nodes (or generic_visit)

    def __init__(self, source: Source):
        self.source = source

    def visit(self, node):
        """A parse tree node -> its value: the method of its rule (`visit_` and the rule's
        name, else `generic_visit`) applied to the node and its children's values.  As
        parsimonious's NodeVisitor, with the method found once a rule rather than once a node,
        and exceptions left as they are (a large file's parse tree has ~100k nodes)."""
        method = self._methods.get(node.expr_name)
        if method is None:
            method = self._methods[node.expr_name] = getattr(_Builder, "visit_" + node.expr_name,
                                                             _Builder.generic_visit)
        return method(self, node, [self.visit(child) for child in node.children])

    def span(self, start: int, end: int) -> Span:
        return Span(self.source, start, end)

    # -- generic: tokens and anonymous nodes

    def token(self, node) -> _Tok:
        """A token node (group `t` of its regex) -> its text and span."""
        match = node.match
        return _Tok(match.group("t"), self.span(match.start("t"), match.end("t")))

    def generic_visit(self, node, children):
        """Token rule -> _Tok; choice -> its value; anonymous node -> list of values."""
        if node.expr_name in _TOKEN_RULES:
            return self.token(node)
        if node.expr_name in _PASS_RULES:
            return children[0]
        return children

    def visit__(self, node, children):
        return None

    # -- declarations

    def visit_program(self, node, children):
        _, decls, _ = children
        return A.Program(tuple(decls), self.span(0, len(self.source.text)))

    def visit_expr_top(self, node, children):
        return children[1]

    visit_scheme_top = visit_expr_top

    def visit_include(self, node, children):
        kw, path = children
        return A.Include(path.text[1:-1], kw.span.to(path.span))

    def visit_sig(self, node, children):
        kw, name, _, scheme = children
        return A.Sig(name.text, scheme, kw.span.to(scheme.span))

    def visit_fundecl(self, node, children):
        kw, name, lvls, params, _, body = children
        value = _abstract(lvls, params, body)
        return A.Val(name.text, value, True, name.span, kw.span.to(body.span))

    def visit_valdecl(self, node, children):
        kw, name, lvls, _, body = children
        value = _abstract(lvls, [], body)
        return A.Val(name.text, value, False, name.span, kw.span.to(body.span))

    def visit_lvlbinder(self, node, children):
        lt, name, gt = children
        return _LevelBinder(name.text, lt.span.to(gt.span))

    # -- expressions

    def visit_expr(self, node, children):
        first, rest = children
        operands = [first] + [operand for _, operand in rest]
        ops = [op for op, _ in rest]
        expr, _ = _climb(operands, ops, 0, 0)
        return expr

    def visit_operand(self, node, children):
        prefixes, (core,) = children
        for op in reversed(prefixes):
            core = A.UnOp(op.text, core, op.span.to(core.span))
        return core

    def visit_fnexpr(self, node, children):
        kw, params, _, body = children
        lvls_and_vars = list(params)
        value = _abstract_mixed(lvls_and_vars, body)
        return _respan(value, kw.span.to(body.span))

    def visit_letexpr(self, node, children):
        kw, bindings, _, body = children
        for i, (name, value) in reversed(list(enumerate(bindings))):
            start = kw.span if i == 0 else name.span
            body = A.Let(name.text, value, body, start.to(body.span))
        return body

    def visit_binding(self, node, children):
        name, lvls, params, _, body = children
        return name, _abstract(lvls, params, body)

    def visit_ifexpr(self, node, children):
        kw, cond, _, then, _, else_ = children
        return A.If(cond, then, else_, kw.span.to(else_.span))

    def visit_app(self, node, children):
        head, args, tail = children
        ends = [self.closing_end(arg, n) for arg, n in zip(args, node.children[1].children)]
        ends += [arg.span.end for arg in tail]
        for arg, end in zip(list(args) + list(tail), ends):
            if isinstance(arg, _LevelArg):
                head = A.LevelApp(head, arg.level, head.span.to(arg.span))
            else:
                head = A.App(head, arg, self.span(head.span.start, end))
        return head

    def closing_end(self, arg, arg_node) -> int:
        """Where an argument really ends: after the `)`s that close it (`f (x + 1)`)."""
        end = arg.span.end
        m = _CLOSING_PARENS.match(self.source.text, end, arg_node.end)
        return m.end() if m and m.end() > end else end

    def visit_argatom(self, node, children):
        return children[1]

    def visit_lvlapp(self, node, children):
        lt, level, gt = children
        return _LevelArg(level, lt.span.to(gt.span))

    def visit_simple(self, node, children):
        match = node.match
        span = self.span(match.start("t"), match.end("t"))
        text = match.group("t")
        if match.group("num") is not None:
            return _number(text, span)
        if match.group("bool") is not None:
            return A.BoolLit(text == "true", span)
        if match.group("hw") is not None:
            return A.HwParam(text, span)
        return A.Var(text, span)

    def visit_lowexpr(self, node, children):
        _, (inner,) = children
        return inner

    def visit_paren(self, node, children):
        lp, inner, rest, rp = children
        if not rest:
            return inner
        (_, snd), = rest
        return A.Pair(inner, snd, lp.span.to(rp.span))

    def visit_array(self, node, children):
        lb, body, rb = children
        elems = []
        if body:
            (first, rest), = body
            elems = [first] + [e for _, e in rest]
        return A.ArrayLit(tuple(elems), lb.span.to(rb.span))

    # -- levels

    def visit_levelsucc(self, node, children):
        one, _, inner = children
        return A.LSucc(inner, one.span.to(inner.span))

    def visit_levelname(self, node, children):
        tok = self.token(node)
        if tok.text in LEVEL_NAMES:
            return A.LNamed(tok.text, tok.span)
        return A.LVar(tok.text, tok.span)

    # -- types and schemes

    def visit_forall(self, node, children):
        kw, binders, _, body = children
        lvars = tuple(b.name for b in binders if isinstance(b, _LevelBinder))
        tvars = tuple(_binder_tvar(b) for b in binders if not isinstance(b, _LevelBinder))
        return A.SchemeAst(lvars, tvars, body, kw.span.to(body.span))

    def visit_scheme(self, node, children):
        (inner,) = children
        if isinstance(inner, A.SchemeAst):
            return inner
        return A.SchemeAst((), (), inner, inner.span)

    def visit_lvltype(self, node, children):
        binder, _, body = children
        return A.TLevelFun(binder.name, body, binder.span.to(body.span))

    def visit_funtype(self, node, children):
        arg, rest = children
        if not rest:
            return arg
        (_, res), = rest
        return A.TFun(arg, res, arg.span.to(res.span))

    def visit_tname(self, node, children):
        return _type_name(self.token(node))

    def visit_tparen(self, node, children):
        lp, inner, rest, rp = children
        if not rest:
            return inner
        (_, snd), = rest
        return A.TPair(inner, snd, lp.span.to(rp.span))

    def visit_tarray(self, node, children):
        lb, elem, rb, push = children
        if not push:
            return A.TPull(elem, lb.span.to(rb.span))
        (_, level, gt), = push
        return A.TPush(elem, level, lb.span.to(gt.span))


_TOKEN_RULES = frozenset({
    "ident", "string", "binop", "prefix", "langle", "rangle", "lparen", "rparen",
    "lbrack", "rbrack", "comma", "colon", "dot", "one", "plus", "equals", "darrow",
    "arrow", "kw_include", "kw_sig", "kw_fun", "kw_val", "kw_fn", "kw_let",
    "kw_in", "kw_if", "kw_then", "kw_else", "kw_forall"})
_PASS_RULES = frozenset({"decl", "fnparam", "arg", "atom", "level",
                         "sbinder", "type", "tatom"})


# ---------------------------------------------------------------- building helpers

def _abstract(lvls: list, params: list, body: A.Expr) -> A.Expr:
    """`<l>* x* => body` binders -> nested LevelLam/Lam around body."""
    return _abstract_mixed(list(lvls) + list(params), body)


def _abstract_mixed(binders: list, body: A.Expr) -> A.Expr:
    """Binders (`_LevelBinder` or `_Tok`) in written order -> nested lambdas."""
    for b in reversed(binders):
        if isinstance(b, _LevelBinder):
            body = A.LevelLam(b.name, body, b.span.to(body.span))
        else:
            body = A.Lam(b.text, body, b.span.to(body.span))
    return body


def _respan(expr: A.Expr, span: Span) -> A.Expr:
    """The same lambda with the span of the whole `fn ... => body`."""
    if isinstance(expr, A.LevelLam):
        return A.LevelLam(expr.lvar, expr.body, span)
    if isinstance(expr, A.Lam):
        return A.Lam(expr.param, expr.body, span)
    raise CompilerBug(f"fn without parameters: {expr!r}")


def _climb(operands: list, ops: list, i: int, min_prec: int):
    """Precedence climbing over `operands[i] ops[i] operands[i+1] ...`
    -> (expression, index of the first operator not consumed)."""
    lhs = operands[i]
    while i < len(ops) and PRECEDENCE[ops[i].text] >= min_prec:
        op = ops[i]
        prec = PRECEDENCE[op.text]
        rhs, j = _climb(operands, ops, i + 1, prec if op.text in RIGHT_ASSOC else prec + 1)
        lhs = A.BinOp(op.text, lhs, rhs, lhs.span.to(rhs.span))
        if op.text in NON_ASSOC and j < len(ops) and PRECEDENCE[ops[j].text] == prec:
            raise _chained_comparison(op, ops[j])
        i = j
    return lhs, i


def _chained_comparison(first: _Tok, second: _Tok) -> ParseError:
    """Two comparisons in a row -> the error saying they do not chain."""
    return ParseError(
        f"comparison operators do not chain: `{second.text}` follows `{first.text}`; "
        "add parentheses, e.g. `(a < b) && (b < c)`", second.span)


def _number(text: str, span: Span) -> A.Expr:
    """Numeric literal text -> IntLit/DoubleLit/FloatLit, range-checked."""
    if text.endswith("f"):
        value = float(text[:-1])
        if math.isinf(value) or abs(value) > FLOAT_MAX:
            raise ParseError(f"float literal `{text}` is out of range for a 32-bit float", span)
        return A.FloatLit(value, span)
    if any(c in text for c in ".eE"):
        value = float(text)
        if math.isinf(value):
            raise ParseError(f"double literal `{text}` is out of range for a double", span)
        return A.DoubleLit(value, span)
    digits = text.lstrip("+-").lstrip("0")
    value = int(text) if len(digits) <= 12 else None    # Python refuses to convert > 4300 digits
    if value is None or not INT_MIN <= value <= INT_MAX:
        shown = f"`{text}`" if len(text) <= 40 else f"`{text[:20]}...` ({len(digits)} digits)"
        raise ParseError(f"integer literal {shown} is out of range for a 32-bit int "
                         f"({INT_MIN} to {INT_MAX})", span)
    return A.IntLit(value, span)


def _type_name(tok: _Tok) -> A.TypeAst:
    """`int`/`'a`/`a` -> TBase/TVar; a keyword or capitalised name -> ParseError."""
    text = tok.text
    if text in BASE_TYPES:
        return A.TBase(text, tok.span)
    if text.startswith("'"):
        return A.TVar(text[1:], tok.span)
    if text in KEYWORDS:
        what = "a level" if text in LEVEL_KEYWORDS else "a keyword"
        raise ParseError(f"expected a type, found `{text}`, which is {what}", tok.span)
    if not text[0].islower():
        raise ParseError(f"unknown type `{text}`: the base types are int, float, double "
                         f"and bool, and type variables are written `'a`", tok.span)
    return A.TVar(text, tok.span)


def _binder_tvar(ty: A.TypeAst) -> str:
    """A `forall` binder parsed as a type name -> the type variable's name."""
    if isinstance(ty, A.TVar):
        return ty.name
    raise ParseError(f"expected a type variable after `forall`, found the base type "
                     f"`{ty.name}`", ty.span)


# ---------------------------------------------------------------- diagnostics

_TRIVIA = regex.compile(TRIVIA)
_TOKEN = regex.compile(
    r"\"[^\"\n]*\"?|#?'?[A-Za-z][A-Za-z0-9_']*|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[A-Za-z0-9_']*"
    r"|\|>|\|\||&&|==|!=|<=|>=|<<|>>|=>|->|\(\*|\*\)|.", regex.S)
_TOKEN_START = regex.compile(r"[A-Za-z0-9_'#\"()\[\],:.=<>|&^+\-*/%!]")

# What each grammar rule stands for in "expected ..." (rank orders the list).
_DESCRIPTIONS = {
    "rparen": (0, "`)`"), "rbrack": (0, "`]`"), "rangle": (0, "`>`"),
    "kw_in": (0, "`in`"), "kw_then": (0, "`then`"), "kw_else": (0, "`else`"),
    "darrow": (0, "`=>`"), "equals": (0, "`=`"), "colon": (0, "`:`"),
    "dot": (0, "`.`"), "arrow": (1, "`->`"), "comma": (1, "`,`"),
    "expr": (2, "an expression"), "operand": (2, "an expression"),
    "scheme": (2, "a type"), "type": (2, "a type"),
    "level": (2, "a level"), "string": (2, "a file name in double quotes"),
    "ident": (3, "a name"), "fnparam": (3, "a name"), "binding": (3, "a name"),
    "decl": (5, "a declaration (`fun`, `val`, `sig` or `include`)"),
    "eof": (6, "end of input"),
}
_CLOSERS = {"(": ")", "[": "]", "let": "in", "if": "then", "then": "else", "fn": "=>"}
_CLOSER_RULES = {"rparen", "rbrack", "kw_in", "kw_then", "kw_else", "darrow"}


@dataclass(frozen=True)
class _Lexeme:
    text: str
    start: int
    end: int


def _diagnose(source: Source, pos: int, failed: set[str]) -> ParseError:
    """Furthest failure position and the rules failing there -> a ParseError."""
    lexemes = _lex(source.text)
    before = [lx for lx in lexemes if lx.end <= pos]
    found = next((lx for lx in lexemes if lx.end > pos), None)
    special = _special_error(source, found, before)
    if special is not None:
        return special
    expected = _expected(failed)
    return _expected_error(source, expected, found, before)


def _lex(text: str) -> list[_Lexeme]:
    """Program text -> rough tokens (comments skipped), for error messages only."""
    out, pos = [], 0
    while True:
        pos = _TRIVIA.match(text, pos).end()
        if pos >= len(text):
            return out
        m = _TOKEN.match(text, pos)
        out.append(_Lexeme(m.group(), pos, m.end()))
        pos = m.end()


_NAME_RE = regex.compile(r"[A-Za-z][A-Za-z0-9_']*")


def _special_error(source: Source, found, before) -> ParseError | None:
    """Unclosed comment, stray character, unmatched bracket -> ParseError; else None."""
    if found is None:
        return None
    span = Span(source, found.start, found.end)
    if found.text == "(*":
        return ParseError("unclosed comment: this `(*` has no matching `*)`", span)
    if not _TOKEN_START.match(found.text):
        return ParseError(f"unexpected character `{found.text}`", span)
    if found.text in (")", "]") and not any(o.text in "([" for o in _open(before)):
        return ParseError(f"unmatched `{found.text}`: no opening bracket before it", span)
    return None


def _expected(failed: set[str]) -> list[str]:
    """Names of rules failing at the error point -> ordered descriptions."""
    ranked = sorted({_DESCRIPTIONS[n] for n in failed if n in _DESCRIPTIONS})
    if ranked and ranked[0][0] == 0:
        ranked = [r for r in ranked if r[0] <= 2 and r[1] != "an expression"] or ranked
    return [text for _, text in ranked]


def _expected_error(source: Source, expected: list[str], found, before) -> ParseError:
    """Descriptions, the token found and the tokens before it -> the message."""
    what = _join(expected) if expected else "something else"
    prev = before[-1] if before else None
    if expected == ["an expression"] and prev is not None:
        what += f" after `{prev.text}`"
    what += _context(source, expected, before)
    if found is None:
        end = prev.end if prev else len(source.text)
        return ParseError(f"unexpected end of input: expected {what}", Span(source, end, end))
    span = Span(source, found.start, found.end)
    return ParseError(f"expected {what}, found {_show(found.text, expected)}", span,
                      _hints(expected, found, before))


def _hints(expected: list[str], found, before) -> list[str]:
    """Notes for common mistakes at a parse error: a pattern `(a, b)` as a parameter."""
    if found.text != "(" or not {"a name", "`=`"} & set(expected):
        return []
    k = len(before) - 1
    while k >= 0 and before[k].text not in KEYWORDS and _NAME_RE.fullmatch(before[k].text):
        k -= 1
    if k >= 0 and before[k].text in ("fun", "fn", "let"):
        return ["FCL has no patterns in parameters: take the pair as one parameter and use "
                "`fst` and `snd`, e.g. `fun f p = fst p + snd p`"]
    return []


def _context(source: Source, expected: list[str], before) -> str:
    """' to close the `(` at 3:5' when the innermost open construct's closer is expected."""
    opened = _open(before)
    if not opened:
        return ""
    opener = opened[-1]
    closer = f"`{_CLOSERS[opener.text]}`"
    if closer not in expected:
        return ""
    line, col = source.line_col(opener.start)
    verb = "close" if opener.text in "([" else "finish"
    return f" to {verb} the `{opener.text}` at {line}:{col}"


def _open(before: list[_Lexeme]) -> list[_Lexeme]:
    """Tokens before the error -> the constructs still open there, innermost last."""
    stack: list[_Lexeme] = []
    for lx in before:
        if lx.text in ("fun", "val", "sig", "include"):
            stack = []
        elif lx.text in ("(", "[", "let", "if", "fn"):
            stack.append(lx)
        elif stack and lx.text == _CLOSERS[stack[-1].text]:
            top = stack.pop()
            if top.text == "if":
                stack.append(lx)  # `then` waits for its `else`
    return stack


def _show(text: str, expected: list[str]) -> str:
    """A token's text and what was expected -> how the message names the token."""
    if text not in KEYWORDS:
        return f"`{text}`"
    if "a name" in expected and text not in ("fun", "val", "sig", "include"):
        return f"keyword `{text}` (a keyword cannot be used as a name)"
    return f"keyword `{text}`"


def _join(items: list[str]) -> str:
    """['a', 'b', 'c'] -> 'a, b or c'."""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]
