"""The concrete syntax of FCL as one parsimonious grammar (language.md sections 1-4).

Conventions:

* Every token is a named rule made of ONE regex: the token itself, as group
  ``t``, then the white space and comments after it (comments nest, through
  the recursive group ``c``).  One regex per token, few rules per operand
  and a cheap keyword look-ahead before ``fn``/``let``/``if`` are what make
  parsimonious fast enough.
* Binary operators are parsed flat (``operand (binop operand)*``); the
  parser resolves precedence and associativity afterwards (section 3 table).
* ``fn``/``let``/``if`` may stand as the last operand or last argument and
  then extend as far right as possible.
* ``arg`` refuses to start a new argument where a ``let`` binding starts
  (``name <l>* params =``, one look-ahead regex), so
  ``let a = f x  b = 2 in e`` has two bindings.
* Entry rules: ``program``, ``expr_top``, ``scheme_top``.

Rule names are used by the parser's error reporting (`parser._DESCRIPTIONS`).
"""
from fcl.base.hw import LEVEL_KEYWORDS

KEYWORDS = ("sig", "fun", "val", "let", "in", "fn", "if", "then", "else", "forall",
            "div", "mod", "not", "true", "false", "int", "float", "double", "bool",
            "thread", "warp", "block", "grid", "include")


_IDCHAR = r"[A-Za-z0-9_']"
_END = f"(?!{_IDCHAR})"
_KW = "(?:" + "|".join(KEYWORDS) + ")" + _END
_NONLEVEL_KW = "(?:" + "|".join(k for k in KEYWORDS if k not in LEVEL_KEYWORDS) + ")" + _END
_NAME = f"[A-Za-z]{_IDCHAR}*"
# A `-` is part of a negative literal when followed by a digit and preceded by
# white space, an opening bracket, a comma or the start of the text.
_NEG = r"(?<![^\s(\[,])-(?=\d)"
_NUMBER = r"(?:" + _NEG + r")?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?f?" + _END
# White space and comments; `(* ... *)` nests through the recursive group `c`.
_DEFINE = r"(?(DEFINE)(?P<c>\(\*(?:[^(*]++|\((?!\*)|\*(?!\))|(?&c))*+\*\)))"
_TRIVIA = r"(?:\s+|--[^\n]*|(?&c))*+"
TRIVIA = _DEFINE + _TRIVIA  # a regex for white space and comments, for the parser's diagnostics


_SIMPLE = (f"(?P<num>{_NUMBER})|(?P<bool>(?:true|false){_END})|(?P<hw>#{_NAME})"
           f"|(?P<id>(?!{_KW}){_NAME})")
_STRING = '"[^"\\n]*"'
_BINOP = (r"\|>|\|\||&&|==|!=|<=|>=|<<|>>|<|>|\||\^|&|\+|-|\*|/|%|\."
          f"|div{_END}|mod{_END}")
_BINDSTART = (f"{_DEFINE}(?!{_KW}){_NAME}{_TRIVIA}(?:<{_TRIVIA}{_NAME}{_TRIVIA}>{_TRIVIA})*"
              f"(?:(?!{_KW}){_NAME}{_TRIVIA})*=(?![=>])")


def _tok(pattern: str) -> str:
    """Token regex -> grammar rule body: one regex, the token as group `t`,
    then the trivia after it."""
    regex = f"{_DEFINE}(?P<t>{pattern}){_TRIVIA}"
    quote = "'" if '"' in regex else '"'
    if quote in pattern:
        raise ValueError(f"token pattern uses both quotes: {pattern}")
    return f"~r{quote}{regex}{quote}"


def _kw(word: str) -> str:
    """keyword -> grammar rule body matching exactly that keyword."""
    return _tok(word + _END)


def _lit(text: str) -> str:
    """Punctuation -> grammar rule body matching exactly that text."""
    return _tok("".join("\\" + c if c in r".()[]|*+^$?{}\\" else c for c in text))


GRAMMAR = rf"""
program     = _ decl* eof
expr_top    = _ expr eof
scheme_top  = _ scheme eof

decl        = include / sig / fundecl / valdecl
include     = kw_include string
sig         = kw_sig ident colon scheme
fundecl     = kw_fun ident lvlbinder* ident+ equals expr
valdecl     = kw_val ident lvlbinder* equals expr
lvlbinder   = langle ident rangle

expr        = operand (binop operand)*
operand     = prefix* (app / lowexpr)
lowexpr     = &lowkw (fnexpr / letexpr / ifexpr)
fnexpr      = kw_fn fnparam+ darrow expr
fnparam     = lvlbinder / ident
letexpr     = kw_let binding+ kw_in expr
binding     = ident lvlbinder* ident* equals expr
ifexpr      = kw_if expr kw_then expr kw_else expr
app         = atom arg* lowexpr?
arg         = lvlapp / argatom
argatom     = !bindstart atom
lvlapp      = langle level rangle
atom        = simple / paren / array
paren       = lparen expr (comma expr)? rparen
array       = lbrack (expr (comma expr)*)? rbrack

level       = levelsucc / levelname
levelsucc   = one plus level

scheme      = forall / type
forall      = kw_forall sbinder* dot type
sbinder     = lvlbinder / tname
type        = lvltype / funtype
lvltype     = lvlbinder arrow type
funtype     = tatom (arrow type)?
tatom       = tname / tparen / tarray
tparen      = lparen type (comma type)? rparen
tarray      = lbrack type rbrack (langle level rangle)?

simple      = {_tok(_SIMPLE)}
ident       = {_tok("(?!" + _KW + ")" + _NAME)}
levelname   = {_tok("(?!" + _NONLEVEL_KW + ")" + _NAME)}
tname       = {_tok("(?!forall" + _END + ")'?" + _NAME)}
string      = {_tok(_STRING)}
binop       = {_tok(_BINOP)}
prefix      = {_tok("not" + _END + "|(?!" + _NEG + ")-")}
bindstart   = ~r"{_BINDSTART}"
lowkw       = ~r"(?:fn|let|if){_END}"
langle      = {_tok("<(?![=<])")}
rangle      = {_tok(">(?![=>])")}
lparen      = {_lit("(")}
rparen      = {_lit(")")}
lbrack      = {_lit("[")}
rbrack      = {_lit("]")}
comma       = {_lit(",")}
colon       = {_lit(":")}
dot         = {_lit(".")}
one         = {_tok("1(?![0-9])")}
plus        = {_lit("+")}
equals      = {_tok("=(?![=>])")}
darrow      = {_lit("=>")}
arrow       = {_lit("->")}
kw_include  = {_kw("include")}
kw_sig      = {_kw("sig")}
kw_fun      = {_kw("fun")}
kw_val      = {_kw("val")}
kw_fn       = {_kw("fn")}
kw_let      = {_kw("let")}
kw_in       = {_kw("in")}
kw_if       = {_kw("if")}
kw_then     = {_kw("then")}
kw_else     = {_kw("else")}
kw_forall   = {_kw("forall")}
eof         = ~r"\Z"
_           = ~r"{_DEFINE}{_TRIVIA}"
"""
