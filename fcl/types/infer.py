"""Type inference: Hindley-Milner with level variables, kinds and signatures.

Consumes an `ast.Program` (includes already expanded) or an `ast.Expr` and
a `TypeEnv`; produces type schemes (`Scheme`), or raises `TypeCheckError`
located at the subexpression at fault.  Algorithm W over one `Subst` per
top-level declaration, with rank-based let-generalisation.  It decides
types only: it does not evaluate, and it leaves the choice of memory and
loops to later stages.

Decisions the spec leaves to the checker:

* numeric type variables (from `+`, `min`, ...) are not generalised by an
  inner `let`; still open at the end of a top-level declaration they
  default to int (FRAC ones, from `sqrt` ..., to double);
* a `sig` may be more specific than the definition; the declaration then
  gets the `sig`'s scheme;
* a level that would lie above `grid` (`1+grid`, or four `1+` over a
  variable) is an error where it first becomes visible.

Beside the checker: env.py (`TypeEnv`, `CheckedProgram`), written.py (the
types and levels a program writes), messages.py (the words of its errors),
blame.py (the expression that makes a definition miss its `sig`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from fcl.base.errors import CompilerBug, ErrorList, Span, TypeCheckError
from fcl.syntax import ast
from fcl.syntax.loader import prelude_decls
from fcl.types.blame import culprit
from fcl.types.builtins import HARDWARE_PARAMETERS
from fcl.types.env import CheckedProgram, TypeEnv, builtins_env
from fcl.types.messages import (callee, describe, did_you_mean, head_text, level_ast_vars,
                                level_name_hints, mismatch_error, ordinal, orphan_sig, result_span,
                                signature_error)
from fcl.types.node_types import TypedCore, finish_decl
from fcl.types.terms import (BOOL, DOUBLE, FLOAT, INT, LSucc, LVarT, LZero, Level, Scheme, TFunT,
                             TLevelFunT, TPairT, TPullT, TPushT, TVarT, Type, format_level,
                             format_type)
from fcl.types.unify import (Mismatch, Subst, fresh_id, is_flexible, kind_allows, level_succs,
                             level_vars, subst_level_in_type, substitute, type_children, type_vars)
from fcl.types.written import (leading_level_binders, level_base, scheme_from_ast, too_high,
                               written_level)


def check_program(program: ast.Program, env: TypeEnv | None = None) -> CheckedProgram:
    """Check every declaration of `program` in order against `env` (default: the prelude)."""
    scope = (prelude_env() if env is None else env).as_dict()
    own: dict[str, Scheme] = {}
    decls: list[tuple[str, Scheme]] = []
    core = TypedCore()
    pending: tuple[ast.Sig, Scheme] | None = None
    errors: list[TypeCheckError] = []    # every declaration that fails; checking goes on
    for decl in program.decls:
        if isinstance(decl, ast.Sig):
            if pending is not None:
                errors.append(orphan_sig(pending[0], decl))
            try:
                pending = (decl, scheme_from_ast(decl.scheme))
            except TypeCheckError as e:
                errors.append(e)
                pending = (decl, None)
        elif isinstance(decl, ast.Val):
            if pending is not None and pending[0].name != decl.name:
                errors.append(orphan_sig(pending[0], decl))
                pending = None
            try:
                if pending is not None and pending[1] is None:
                    raise _Skipped()
                scheme = check_decl(decl, pending, scope, core)
            except (TypeCheckError, _Skipped) as e:
                if isinstance(e, TypeCheckError):
                    errors.append(e)
                # later declarations see what the sig promised, else anything: no cascades
                scheme = pending[1] if pending is not None and pending[1] is not None else _ANYTHING
            pending = None
            scope[decl.name] = scheme
            own[decl.name] = scheme
            decls.append((decl.name, scheme))
        elif isinstance(decl, ast.Include):
            raise CompilerBug("include reached the type checker; the loader expands includes")
        else:
            raise CompilerBug(f"unknown declaration {decl!r}")
    if pending is not None:
        errors.append(orphan_sig(pending[0], None))
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ErrorList(errors)
    return CheckedProgram(own, TypeEnv(scope), decls, core)


class _Skipped(Exception):
    """A declaration whose `sig` is already reported as wrong is not checked again."""


_ANYTHING = Scheme((), ("a",), TVarT("a"))   # the type of a declaration that failed to check


def check_expr(expr: ast.Expr, env: TypeEnv) -> Scheme:
    """The generalised type of one expression (the REPL's `:type`)."""
    checker = _Checker(env.as_dict(), self_name=None)
    t = checker.infer(expr)
    checker.finish(expr_span(expr))
    return checker.generalize_all(t)


def check_decl(decl: ast.Val, sig: tuple[ast.Sig, Scheme] | None, scope: dict[str, Scheme],
               core: TypedCore | None = None) -> Scheme:
    """The scheme of one top-level declaration (the sig's scheme when one is given);
    with `core`, its types for the lowering are added there."""
    checker = _Checker(scope, self_name=decl.name)
    if core is not None:
        checker.record = _Recorded()
    if sig is not None:
        checker.sig_levels = leading_level_binders(sig[1].body)
    t = checker.infer(decl.value)
    try:
        scheme = checker.check_signature(t, sig[1], sig[0]) if sig is not None else None
    except TypeCheckError as e:
        found = culprit(decl, sig, scope, _Checker)
        if found is None:
            e.related.append((f"the definition of `{decl.name}`, whose result comes from here, "
                              "has the other type", result_span(decl.value)))
        else:                   # the error goes where the cause is; the sig becomes a note
            e.notes.append(f"without {found[1]}, the definition would have the signature's type")
            e.related.append((f"the signature of `{decl.name}`", e.span))
            e.span = found[0]
        e.notes.extend(level_name_hints(sig[0].scheme))
        raise
    checker.finish(decl.span)
    if core is not None:
        rec = checker.record
        core.add(finish_decl(decl, checker.sub, t, rec.vars, rec.lets, rec.lams))
    return scheme if scheme is not None else checker.generalize_all(t)


def expr_span(e) -> Span | None:
    """Where an expression is, if it says."""
    return getattr(e, "span", None)


def prelude_env() -> TypeEnv:
    """The primitives plus every prelude declaration; parsed and checked once per process."""
    return prelude_checked().env


def prelude_core() -> TypedCore:
    """The typed core of the prelude's declarations (those of `loader.prelude_decls`)."""
    return prelude_checked().core


@lru_cache(maxsize=1)
def prelude_checked() -> CheckedProgram:
    """The prelude checked once per process: the same declaration objects the lowering
    and the evaluator run (`loader.prelude_decls`), so the typed core's node keys fit."""
    return check_program(ast.Program(prelude_decls()), builtins_env())


@dataclass
class _Recorded:
    """What the checker records of one declaration for the lowering (node_types.finish_decl):
    `vars`, every `Var` occurrence and empty array literal with its type; `lets`, per
    `let` (by node id) its value's type and the type and level variables it generalises;
    `lams`, per `fn <l> => ...` (by node id) its rigid level variable."""
    vars: list[tuple[ast.Expr, Type]] = field(default_factory=list)
    lets: dict[int, tuple[Type, frozenset, frozenset]] = field(default_factory=dict)
    lams: dict[int, str] = field(default_factory=dict)


_ARITH = ("+", "-", "*", "/")
_COMPARE = ("<", "<=", ">", ">=")
_EQUALITY = ("==", "!=")
_INT_ONLY = ("%", "div", "mod", "<<", ">>", "|", "^", "&")
_LOGIC = ("&&", "||")


class _Checker:
    """Inference state for one top-level declaration (or one REPL expression)."""

    def __init__(self, globals_: dict[str, Scheme], self_name: str | None):
        self.sub = Subst()
        self.globals = globals_
        self.self_name = self_name
        self.depth = 1
        self.locals: dict[str, Scheme] = {}
        self.levels: dict[str, Level] = {}
        self.mono: list[Type] = []
        self.obligations: list[tuple[Level, str, Span | None]] = []   # (level, name, its use)
        self.sig_levels: list[str] = []
        self.record: _Recorded | None = None     # types for the lowering, when asked

    # -- entry points

    def infer(self, e: ast.Expr) -> Type:
        """The type of `e` (variables possibly still open in `self.sub`)."""
        method = _DISPATCH.get(type(e))
        if method is None:
            raise CompilerBug(f"unknown expression {e!r}")
        return method(self, e)

    def finish(self, span: Span) -> None:
        """Default open numeric variables and check the pending level bounds."""
        self.sub.default_numeric()
        self.check_obligations(span)

    def generalize_all(self, t: Type) -> Scheme:
        """Quantify every open variable of `t` (top level: nothing is free in the env)."""
        return self._generalize(t, lambda name: True)

    def generalize_above(self, t: Type, depth: int) -> Scheme:
        """Quantify the variables of `t` born deeper than `depth`, except numeric ones."""
        rank = self.sub.rank
        return self._generalize(t, lambda name: rank.get(name, 0) > depth, keep_numeric=True)

    def _generalize(self, t: Type, pick, keep_numeric: bool = False) -> Scheme:
        z = self.sub.zonk(t)
        tmap: dict[str, Type] = {}
        for name, v in type_vars(z).items():
            if is_flexible(name) and pick(name) and not (keep_numeric and v.kind in ("NUM", "FRAC")):
                tmap[name] = TVarT(f"t{fresh_id()}", v.kind)
        lmap: dict[str, Level] = {}
        for name in level_vars(z):
            if is_flexible(name) and pick(name):
                lmap[name] = LVarT(f"{name[1:].split('#')[0]}#{fresh_id()}")
        if not tmap and not lmap:
            return Scheme((), (), z)
        body = substitute(z, tmap, lmap)
        return Scheme(tuple(v.name for v in lmap.values()),
                      tuple(v.name for v in tmap.values()), body)

    def instantiate(self, s: Scheme, name: str, span: Span | None = None) -> Type:
        """A fresh instance of `s`; levels `1+l` it creates are remembered for the grid bound
        (with `span`, the use, where an error about them points)."""
        if not s.tvars and not s.lvars:
            return s.body
        kinds = _scheme_var_kinds(s)
        tmap = {n: self.sub.fresh_type(kinds.get(n, "TYP"), self.depth) for n in s.tvars}
        lmap = {n: self.sub.fresh_level(self.depth, n.split("#")[0]) for n in s.lvars}
        t = substitute(s.body, tmap, lmap)
        if lmap:
            self._remember_raised_levels(t, name, span)
        return t

    def _remember_raised_levels(self, t: Type, name: str, span: Span | None = None) -> None:
        for lv in _push_levels(t):
            if level_succs(lv) > 0 and not isinstance(level_base(lv), LZero):
                self.obligations.append((lv, name, span))

    def check_obligations(self, span: Span) -> None:
        """Raise if a remembered `1+...` level has come to lie above grid."""
        keep = []
        for lv, name, use in self.obligations:
            z = self.sub.zonk_level(lv)
            if too_high(z):
                raise TypeCheckError(
                    f"this use of `{name}` would build a push array at level {format_level(z)}, "
                    "but grid is the highest level", use or span,
                    [f"`{name}` builds at one level above its parts; here its parts are already at "
                     f"level {format_level(_lower(z))}"])
            if not isinstance(level_base(z), LZero):
                keep.append((lv, name, use))
        self.obligations = keep

    def check_levels(self, t: Type, span: Span, what: str) -> None:
        """Raise if some push array level in `t` lies above grid."""
        for lv in _push_levels(self.sub.zonk(t)):
            if too_high(lv):
                raise TypeCheckError(f"{what} would be a push array at level {format_level(lv)}, "
                                     "but grid is the highest level", span)

    # -- signatures

    def check_signature(self, t: Type, sig: Scheme, decl: ast.Sig) -> Scheme:
        """The sig's scheme, if the definition's type `t` is at least as general; else error at the sig.

        A written type variable has the kind its position gives it (language.md
        section 4) and is narrowed to the kind the definition needs: in
        `sig eq : 'a -> 'a -> bool` with `fun eq x y = x == y`, `'a` stands for
        the scalar types, as inference would have it.  The scheme returned
        carries those kinds, so uses of the declaration are checked against them.
        """
        snap = self.sub.snapshot()
        kinds = _scheme_kinds(sig)
        lmap = {n: LVarT(f"{n}#{fresh_id()}") for n in sig.lvars}
        for _ in range(4 * len(kinds) + 1):
            tmap = {n: TVarT(f"!{n}#{fresh_id()}", k) for n, k in kinds.items()}
            rigid = substitute(sig.body, tmap, lmap)
            try:
                self.sub.unify(rigid, t)
                return _with_kinds(sig, kinds)
            except Mismatch as m:
                failure = m
            self.sub.restore(snap)
            narrowed = _narrowed_kind(failure, tmap, kinds)
            if narrowed is None:
                break
            kinds = {**kinds, **narrowed}
        general = self._unifies(self.instantiate(sig, decl.name), t)
        self.sub.restore(snap)
        self.sub.default_numeric()
        raise signature_error(decl, sig, self.generalize_all(t), general, failure, self.sub)

    def _unifies(self, expected: Type, found: Type) -> bool:
        try:
            self.sub.unify(expected, found)
            return True
        except Mismatch:
            return False

    # -- expressions

    def _int(self, e) -> Type:
        return INT

    def _float(self, e) -> Type:
        return FLOAT

    def _double(self, e) -> Type:
        return DOUBLE

    def _bool(self, e) -> Type:
        return BOOL

    def _hw(self, e: ast.HwParam) -> Type:
        if e.name in HARDWARE_PARAMETERS:
            return INT
        raise TypeCheckError(f"unbound hardware parameter `{e.name}`"
                             f"{did_you_mean(e.name, HARDWARE_PARAMETERS)}", e.span,
                             ["the hardware parameters are " + ", ".join(HARDWARE_PARAMETERS)])

    def _var(self, e: ast.Var) -> Type:
        s = self.locals.get(e.name)
        if s is None:
            if e.name == self.self_name:
                raise TypeCheckError(
                    f"recursive use of `{e.name}`: FCL has no recursion; write loops with "
                    "`while` or `foldl`", e.span,
                    ["a declaration sees only the declarations before it"])
            s = self.globals.get(e.name)
            if s is None:
                raise self._unbound(e)
        t = self.instantiate(s, e.name, e.span)
        if self.record is not None:
            self.record.vars.append((e, t))
        return t

    def _unbound(self, e: ast.Var) -> TypeCheckError:
        candidates = list(self.locals) + list(self.globals)
        notes = []
        if self.locals and len(self.locals) <= 6:
            notes.append("local names here: " + ", ".join(f"`{n}`" for n in self.locals))
        return TypeCheckError(f"unbound name `{e.name}`{did_you_mean(e.name, candidates)}",
                              e.span, notes)

    def _lam(self, e: ast.Lam) -> Type:
        a = self.sub.fresh_type("TYP", self.depth)
        saved = self.locals
        self.locals = {**saved, e.param: Scheme((), (), a)}
        self.mono.append(a)
        try:
            body = self.infer(e.body)
        finally:
            self.locals = saved
            self.mono.pop()
        return TFunT(a, body)

    def _level_lam(self, e: ast.LevelLam) -> Type:
        rigid = LVarT(f"{e.lvar}#{fresh_id()}")
        saved = self.levels
        self.levels = {**saved, e.lvar: rigid}
        try:
            body = self.infer(e.body)
        finally:
            self.levels = saved
        if self.record is not None:
            self.record.lams[id(e)] = rigid.name
        for t in self.mono:
            if rigid.name in level_vars(self.sub.zonk(t)):
                raise TypeCheckError(
                    f"the level variable `{e.lvar}` escapes its scope: a value from outside "
                    f"`fn <{e.lvar}> => ...` would get a type that mentions it", e.span)
        return TLevelFunT(rigid.name, body)

    def _level_app(self, e: ast.LevelApp) -> Type:
        tf = self.sub.resolve(self.infer(e.fn))
        try:
            level = written_level(e.level, e.span, self.levels)
        except TypeCheckError as err:
            raise self._explain_sig_level(err, e.level) from None
        if isinstance(tf, TLevelFunT):
            result = subst_level_in_type(self.sub.zonk(tf.body), tf.lvar, level)
            self.check_levels(result, e.span, "the result of this level application")
            return result
        what = describe(e.fn)
        if isinstance(tf, TVarT) and is_flexible(tf.name):
            raise TypeCheckError(
                f"{what} is applied to a level, but its type is not known to be level-abstracted "
                "here", e.span,
                ["FCL cannot infer level-polymorphic parameters; level-apply the function before "
                 "passing it"])
        raise TypeCheckError(
            f"{what} is not level-abstracted (its type is {format_type(self.sub.zonk(tf))}), so it "
            f"cannot be applied to the level <{format_level(level)}>", e.span)

    def _explain_sig_level(self, err: TypeCheckError, lv: ast.LevelAst) -> TypeCheckError:
        """Add a hint when an unbound level variable is one the `sig` abstracts over."""
        names = [n.name for n in level_ast_vars(lv)]
        hits = [n for n in names if n in self.sig_levels and n not in self.levels]
        if hits:
            err.notes.append(f"the signature's `<{hits[0]}>` does not bind `{hits[0]}` in the body; "
                             f"bind it there too: `fun {self.self_name} <{hits[0]}> ... = ...`")
        return err

    def _app(self, e: ast.App) -> Type:
        tf = self.infer(e.fn)
        param, res = self._as_function(tf, e.fn)
        ta = self.infer(e.arg)
        head, k = callee(e.fn)
        self._unify_arg(param, ta, e.arg, head, k, piped=False)
        self.check_obligations(e.span)
        return res

    def _pipe(self, e: ast.BinOp) -> Type:
        ta = self.infer(e.left)
        tf = self.infer(e.right)
        param, res = self._as_function(tf, e.right, piped=True)
        head, k = callee(e.right)
        self._unify_arg(param, ta, e.left, head, k, piped=True)
        self.check_obligations(e.span)
        return res

    def _unify_arg(self, param: Type, ta: Type, arg: ast.Expr, head: str | None, k: int,
                   piped: bool) -> None:
        if head is not None:
            context = f"the {ordinal(k)} argument of `{head}` has the wrong type"
        else:
            context = "this argument has the wrong type"
        if piped:
            context += " (it is the value piped in with `|>`)"
        self._unify_at(param, ta, arg.span, context)

    def _as_function(self, t: Type, fn_expr: ast.Expr, piped: bool = False) -> tuple[Type, Type]:
        """Split a function type into (parameter, result), or explain why it is no function."""
        t = self.sub.resolve(t)
        if isinstance(t, TFunT):
            return t.arg, t.res
        if isinstance(t, TVarT) and is_flexible(t.name):
            a = self.sub.fresh_type("TYP", self.depth)
            r = self.sub.fresh_type("TYP", self.depth)
            self._unify_at(t, TFunT(a, r), fn_expr.span, f"{describe(fn_expr)} is used as a function")
            return a, r
        what = describe(fn_expr)
        shown = format_type(self.sub.zonk(t))
        if isinstance(t, TLevelFunT):
            raise TypeCheckError(f"{what} must be applied to a level first, e.g. `{head_text(fn_expr)} "
                                 f"<block> ...` (its type is {shown})", fn_expr.span)
        if isinstance(fn_expr, (ast.App, ast.LevelApp)) and callee(fn_expr)[0] is not None:
            head = callee(fn_expr)[0]
            raise TypeCheckError(f"`{head}` is applied to too many arguments: {what} has type {shown}, "
                                 "which is not a function", fn_expr.span)
        side = "the right side of `|>` " if piped else ""
        raise TypeCheckError(f"{side}{what} is not a function (its type is {shown}), so it cannot be "
                             "applied to an argument", fn_expr.span)

    def _let(self, e: ast.Let) -> Type:
        self.depth += 1
        try:
            tv = self.infer(e.value)
        finally:
            self.depth -= 1
        scheme = self.generalize_above(tv, self.depth)
        if self.record is not None:
            self._record_let(e, tv)
        saved = self.locals
        self.locals = {**saved, e.name: scheme}
        try:
            return self.infer(e.body)
        finally:
            self.locals = saved

    def _record_let(self, e: ast.Let, tv: Type) -> None:
        """The let's value type and the variables `generalize_above` quantified in it."""
        z, rank = self.sub.zonk(tv), self.sub.rank
        tq = frozenset(n for n, v in type_vars(z).items() if is_flexible(n)
                       and rank.get(n, 0) > self.depth and v.kind not in ("NUM", "FRAC"))
        lq = frozenset(n for n in level_vars(z) if is_flexible(n) and rank.get(n, 0) > self.depth)
        self.record.lets[id(e)] = (tv, tq, lq)

    def _if(self, e: ast.If) -> Type:
        tc = self.infer(e.cond)
        self._unify_at(BOOL, tc, e.cond.span, "the condition of `if` must be a bool")
        tt = self.infer(e.then)
        te = self.infer(e.else_)
        self._unify_at(tt, te, e.else_.span, "the branches of `if` must have the same type",
                       [f"the then-branch has type {format_type(self.sub.zonk(tt))}"])
        return tt

    def _pair(self, e: ast.Pair) -> Type:
        return TPairT(self.infer(e.fst), self.infer(e.snd))

    def _array(self, e: ast.ArrayLit) -> Type:
        elem = self.sub.fresh_type("GT", self.depth)
        if self.record is not None and not e.elems:
            self.record.vars.append((e, TPullT(elem)))      # `[]`: the lowering needs its type
        for i, x in enumerate(e.elems):
            tx = self.infer(x)
            if i == 0:
                self._unify_at(elem, tx, x.span, "array elements must be ground types")
            else:
                self._unify_at(elem, tx, x.span,
                               "the elements of an array literal must all have the same type",
                               [f"the first element has type {format_type(self.sub.zonk(elem))}"])
        return TPullT(elem)

    def _unop(self, e: ast.UnOp) -> Type:
        t = self.infer(e.operand)
        if e.op == "not":
            self._unify_at(BOOL, t, e.operand.span, "`not` needs a bool")
            return BOOL
        if e.op == "-":
            v = self.sub.fresh_type("NUM", self.depth)
            self._unify_at(v, t, e.operand.span, "negation needs a number")
            return v
        raise CompilerBug(f"unknown unary operator {e.op!r}")

    def _binop(self, e: ast.BinOp) -> Type:
        op = e.op
        if op == "|>":
            return self._pipe(e)
        if op == ".":
            return self._compose(e)
        tl = self.infer(e.left)
        if op in _INT_ONLY or op in _LOGIC:
            base = INT if op in _INT_ONLY else BOOL
            self._unify_at(base, tl, e.left.span, f"the left operand of `{op}` must be {base.name}")
            tr = self.infer(e.right)
            self._unify_at(base, tr, e.right.span, f"the right operand of `{op}` must be {base.name}")
            return base
        if op in _ARITH or op in _COMPARE or op in _EQUALITY:
            v = self.sub.fresh_type("BT" if op in _EQUALITY else "NUM", self.depth)
            notes = ([f"`{op}` compares int, float, double or bool values"] if op in _EQUALITY
                     else None)
            self._unify_at(v, tl, e.left.span, f"the left operand of `{op}` has the wrong type",
                           notes)
            tr = self.infer(e.right)
            self._unify_at(v, tr, e.right.span, f"the operands of `{op}` must have the same type",
                           notes or [f"the left operand has type {format_type(self.sub.zonk(tl))}"])
            return v if op in _ARITH else BOOL
        raise CompilerBug(f"unknown binary operator {op!r}")

    def _compose(self, e: ast.BinOp) -> Type:
        tf = self.infer(e.left)
        tg = self.infer(e.right)
        g_arg, g_res = self._as_function(tg, e.right)
        f_arg, f_res = self._as_function(tf, e.left)
        self._unify_at(f_arg, g_res, e.right.span,
                       "the two sides of `.` do not fit together: the right function's result must "
                       "be the left function's argument")
        return TFunT(g_arg, f_res)

    # -- errors

    def _unify_at(self, expected: Type, found: Type, span: Span, context: str,
                  notes: list[str] | None = None) -> None:
        """Unify, turning a Mismatch into a TypeCheckError at `span`.

        `notes` replace the default explanation of a kind failure.
        """
        try:
            self.sub.unify(expected, found)
        except Mismatch as m:
            raise mismatch_error(m, self.sub, expected, found, span, context, notes) from None


_KIND_CACHE: dict[int, tuple[Scheme, dict[str, str]]] = {}


def _scheme_var_kinds(s: Scheme) -> dict[str, str]:
    """Kind of every type variable in `s.body`, cached per scheme object."""
    hit = _KIND_CACHE.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    kinds = {n: v.kind for n, v in type_vars(s.body).items()}
    if len(_KIND_CACHE) > 4096:
        _KIND_CACHE.clear()
    _KIND_CACHE[id(s)] = (s, kinds)
    return kinds


def _narrowed_kind(m: Mismatch, tmap: dict[str, TVarT], kinds: dict[str, str]) -> dict[str, str] | None:
    """A written type variable that failed only on its kind, with the stricter kind it needs."""
    if m.reason != "kind" or not isinstance(m.offender, TVarT):
        return None
    for n, v in tmap.items():
        if v.name == m.offender.name and kind_allows(m.kind, kinds[n]) and m.kind != kinds[n]:
            return {n: m.kind}
    return None


def _with_kinds(s: Scheme, kinds: dict[str, str]) -> Scheme:
    """`s` with its quantified type variables given `kinds`."""
    if all(kinds.get(n) == v.kind for n, v in type_vars(s.body).items() if n in kinds):
        return s
    body = substitute(s.body, {n: TVarT(n, k) for n, k in kinds.items()}, {})
    return Scheme(s.lvars, s.tvars, body)


def _scheme_kinds(s: Scheme) -> dict[str, str]:
    """The kind of each quantified type variable of `s` (TYP where the body has none)."""
    kinds = {n: v.kind for n, v in type_vars(s.body).items()}
    return {n: kinds.get(n, "TYP") for n in s.tvars}


def _push_levels(t: Type):
    """Every push-array level in `t` (no bindings followed)."""
    if isinstance(t, TPushT):
        yield t.level
    for c in type_children(t):
        yield from _push_levels(c)


def _lower(lv: Level) -> Level:
    """One `1+` less."""
    return lv.inner if isinstance(lv, LSucc) else lv


_DISPATCH = {
    ast.IntLit: _Checker._int,
    ast.FloatLit: _Checker._float,
    ast.DoubleLit: _Checker._double,
    ast.BoolLit: _Checker._bool,
    ast.HwParam: _Checker._hw,
    ast.Var: _Checker._var,
    ast.Lam: _Checker._lam,
    ast.LevelLam: _Checker._level_lam,
    ast.App: _Checker._app,
    ast.LevelApp: _Checker._level_app,
    ast.Let: _Checker._let,
    ast.If: _Checker._if,
    ast.Pair: _Checker._pair,
    ast.ArrayLit: _Checker._array,
    ast.BinOp: _Checker._binop,
    ast.UnOp: _Checker._unop,
}
