"""The concrete syntax of FCL as one parsimonious grammar (language.md sections 1-4).

Conventions:

* Every token is a named rule ``~"regex" _``: the regex matches the token
  itself, ``_`` the white space and comments after it.  Keeping tokens as
  single regexes is what makes parsimonious fast enough.
* Binary operators are parsed flat (``operand (binop operand)*``); the
  parser resolves precedence and associativity afterwards (section 3 table).
* ``fn``/``let``/``if`` may stand as the last operand or last argument and
  then extend as far right as possible.
* ``arg`` refuses to start a new argument where a ``let`` binding starts
  (``name params =``), so ``let a = f x  b = 2 in e`` has two bindings.
  The look-ahead uses its own token names (``bindname``, ``bindeq``) so
  that its failures do not show up in "expected ..." messages.
* Entry rules: ``program``, ``expr_top``, ``scheme_top``.

Rule names are used by the parser's error reporting (`parser._DESCRIPTIONS`).
"""

KEYWORDS = ("sig", "fun", "val", "let", "in", "fn", "if", "then", "else", "forall",
            "div", "mod", "not", "true", "false", "int", "float", "double", "bool",
            "thread", "warp", "block", "grid", "include")

LEVEL_KEYWORDS = ("thread", "warp", "block", "grid")

_IDCHAR = r"[A-Za-z0-9_']"
_KW = "(?:" + "|".join(KEYWORDS) + ")(?!" + _IDCHAR + ")"
_NONLEVEL_KW = "(?:" + "|".join(k for k in KEYWORDS if k not in LEVEL_KEYWORDS) + ")(?!" + _IDCHAR + ")"
# A `-` is part of a negative literal when followed by a digit and preceded by
# white space, an opening bracket, a comma or the start of the text.
_NEG = r"(?<![^\s(\[,])-(?=\d)"
_NUMBER = r"(?:" + _NEG + r")?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?f?(?!" + _IDCHAR + ")"


def _kw(word: str) -> str:
    """keyword -> grammar rule body matching exactly that keyword."""
    return f'~r"{word}(?!{_IDCHAR})" _'


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
operand     = prefix* (lowexpr / app)
lowexpr     = fnexpr / letexpr / ifexpr
fnexpr      = kw_fn fnparam+ darrow expr
fnparam     = lvlbinder / ident
letexpr     = kw_let binding+ kw_in expr
binding     = ident lvlbinder* ident* equals expr
ifexpr      = kw_if expr kw_then expr kw_else expr
app         = atom arg* lowexpr?
arg         = lvlapp / argatom
argatom     = !bindstart atom
bindstart   = bindname lvlbinder* bindname* bindeq
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

simple      = ~r"(?P<num>{_NUMBER})|(?P<bool>(?:true|false)(?!{_IDCHAR}))|(?P<hw>#[A-Za-z]{_IDCHAR}*)|(?P<id>(?!{_KW})[A-Za-z]{_IDCHAR}*)" _
ident       = ~r"(?!{_KW})[A-Za-z]{_IDCHAR}*" _
bindname    = ~r"(?!{_KW})[A-Za-z]{_IDCHAR}*" _
levelname   = ~r"(?!{_NONLEVEL_KW})[A-Za-z]{_IDCHAR}*" _
tname       = ~r"'?[A-Za-z]{_IDCHAR}*" _
string      = ~r'"[^"\n]*"' _
binop       = ~r"\|>|\|\||&&|==|!=|<=|>=|<<|>>|<|>|\||\^|&|\+|-|\*|/|%|\.|div(?!{_IDCHAR})|mod(?!{_IDCHAR})" _
prefix      = ~r"not(?!{_IDCHAR})|(?!{_NEG})-" _
langle      = ~r"<(?![=<])" _
rangle      = ~r">(?![=>])" _
lparen      = "(" _
rparen      = ")" _
lbrack      = "[" _
rbrack      = "]" _
comma       = "," _
colon       = ":" _
dot         = "." _
one         = ~r"1(?![0-9])" _
plus        = "+" _
equals      = ~r"=(?![=>])" _
bindeq      = ~r"=(?![=>])" _
darrow      = "=>" _
arrow       = "->" _
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
_           = ~r"(?:\s+|--[^\n]*|(?P<c>\(\*(?:[^(*]++|\((?!\*)|\*(?!\))|(?&c))*+\*\)))*+"
"""
