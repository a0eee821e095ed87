"""Type checker: golden schemes, polymorphism, levels, kinds, signatures, located errors."""
import time
from pathlib import Path

import pytest

from fcl.base.errors import TypeCheckError
from fcl.syntax import ast, parse_expr, parse_program
from fcl.types import (builtins_env, check_expr, check_program, format_scheme, format_type,
                       prelude_env, prelude_path)
from fcl.types.written import type_from_ast
from fcl.types.terms import BLOCK, GRID, INT, LSucc, LVarT, Scheme, TPushT, TVarT, WARP
from fcl.types.unify import Subst

CONFORMANCE = Path("/work/shared/conformance")
REPO = Path(__file__).resolve().parents[2]


def types_of(src: str, env=None) -> dict[str, str]:
    """Check a program (with the prelude unless `env` is given) -> name -> canonical scheme."""
    checked = check_program(parse_program(src, "test.fcl"), env)
    return {name: format_scheme(s) for name, s in checked.schemes.items()}


def type_of_expr(src: str, env=None) -> str:
    return format_scheme(check_expr(parse_expr(src, "expr"), env or prelude_env()))


def error_of(src: str, env=None) -> TypeCheckError:
    with pytest.raises(TypeCheckError) as info:
        check_program(parse_program(src, "test.fcl"), env)
    return info.value


def where(err: TypeCheckError) -> tuple[int, int]:
    return err.span.line, err.span.col


# ---------------------------------------------------------------- golden types

SPEC_PRIMITIVES = {
    "generate": "forall 'a. int -> (int -> 'a) -> ['a]",
    "lengthPull": "forall 'a. ['a] -> int",
    "lengthPush": "forall <l> 'a. ['a]<l> -> int",
    "index": "forall 'a. ['a] -> int -> 'a",
    "mapPull": "forall 'a 'b. ('a -> 'b) -> ['a] -> ['b]",
    "mapPush": "forall <l> 'a 'b. ('a -> 'b) -> ['a]<l> -> ['b]<l>",
    "push": "forall 'a. <l> -> ['a] -> ['a]<l>",
    "force": "forall <l> 'a. ['a]<l> -> ['a]",
    "concat": "forall <l> 'a. int -> [['a]<l>] -> ['a]<1+l>",
    "interleave": "forall <l> 'a. int -> ((int, int) -> int) -> [['a]<l>] -> ['a]<1+l>",
    "while": "forall <l> 'a. (['a] -> bool) -> (['a] -> ['a]<l>) -> ['a]<l> -> ['a]",
    "foldl": "forall 'a 'b. ('a -> 'b -> 'a) -> 'a -> ['b] -> 'a",
    "fst": "forall 'a 'b. ('a, 'b) -> 'a",
    "snd": "forall 'a 'b. ('a, 'b) -> 'b",
    "i2d": "int -> double", "d2i": "double -> int", "i2f": "int -> float",
    "f2i": "float -> int", "f2d": "float -> double", "d2f": "double -> float",
    "b2i": "bool -> int",
}

SPEC_PRELUDE = {
    "id": "forall 'a. 'a -> 'a",
    "const": "forall 'a 'b. 'a -> 'b -> 'a",
    "iota": "int -> [int]",
    "range": "int -> int -> [int]",
    "zipWith": "forall 'a 'b 'c. ('a -> 'b -> 'c) -> ['a] -> ['b] -> ['c]",
    "zipWithPush": "forall <l> 'a 'b 'c. ('a -> 'b -> 'c) -> ['a] -> ['b]<l> -> ['c]<l>",
    "splitAt": "forall 'a. int -> ['a] -> (['a], ['a])",
    "halve": "forall 'a. ['a] -> (['a], ['a])",
    "evenOdds": "forall 'a. ['a] -> (['a], ['a])",
    "splitUp": "forall 'a. int -> ['a] -> [['a]]",
    "coalesce": "forall 'a. int -> ['a] -> [['a]]",
    "take": "forall 'a. int -> ['a] -> ['a]",
    "drop": "forall 'a. int -> ['a] -> ['a]",
    "last": "forall 'a. ['a] -> 'a",
    "pad": "forall 'a. int -> 'a -> ['a] -> ['a]",
    "reverse": "forall 'a. ['a] -> ['a]",
    "transpose": "forall 'a. int -> int -> ['a] -> ['a]",
    "split2DGrid": "forall 'a. int -> int -> int -> ['a] -> [['a]]",
    "concat2DGrid": "forall <l> 'a. int -> int -> [['a]<l>] -> ['a]<1+l>",
    "backpermute": "forall 'a. int -> (int -> (int, int)) -> [['a]] -> ['a]",
}

HASKELL_INT2 = "addi subi muli divi modi mini maxi powi andi ori xor sll srl".split()
HASKELL_CMP = "eqi neqi lti".split()
HASKELL_INT1 = "negatei absi signi clz".split()
HASKELL_DOUBLE2 = "addd subd muld divd addr subr mulr divr".split()


@pytest.mark.parametrize("name", sorted(SPEC_PRIMITIVES))
def test_primitive_scheme(name):
    assert format_scheme(builtins_env()[name]) == SPEC_PRIMITIVES[name]


@pytest.mark.parametrize("name", "min max abs sqrt exp log sin cos floor".split())
def test_overloaded_primitives_default(name):
    numeric = name in ("min", "max", "abs")
    base = "int" if numeric else "double"
    arity = 2 if name in ("min", "max") else 1
    assert type_of_expr(name) == " -> ".join([base] * (arity + 1))


def test_float_math_on_float():
    assert type_of_expr("fn x => sqrt x + 1.0f") == "float -> float"
    assert type_of_expr("max 1.5 2.0") == "double"


@pytest.mark.parametrize("name", sorted(SPEC_PRELUDE))
def test_prelude_scheme(name):
    assert format_scheme(prelude_env()[name]) == SPEC_PRELUDE[name]


def test_prelude_haskell_scalars():
    env = prelude_env()
    for name in HASKELL_INT2:
        assert format_scheme(env[name]) == "int -> int -> int", name
    for name in HASKELL_CMP:
        assert format_scheme(env[name]) == "int -> int -> bool", name
    for name in HASKELL_INT1:
        assert format_scheme(env[name]) == "int -> int", name
    for name in HASKELL_DOUBLE2:
        assert format_scheme(env[name]) == "double -> double -> double", name
    assert format_scheme(env["negated"]) == "double -> double"
    assert format_scheme(env["b2i"]) == "bool -> int"


def test_prelude_every_declaration_has_a_sig():
    program = parse_program(prelude_path().read_text(), "prelude.fcl")
    decls = program.decls
    for i, d in enumerate(decls):
        if isinstance(d, ast.Val):
            assert i > 0 and isinstance(decls[i - 1], ast.Sig) and decls[i - 1].name == d.name, d.name


def test_prelude_definitions_infer_the_spec_types_without_sigs():
    """The sigs are not doing the work: the bodies alone give the spec types."""
    text = prelude_path().read_text()
    bare = "\n".join(line for line in text.splitlines() if not line.startswith("sig "))
    inferred = types_of(bare, builtins_env())
    for name, expected in SPEC_PRELUDE.items():
        if name in inferred:
            assert inferred[name] == expected, name


def test_prelude_path_is_in_checkout():
    assert prelude_path() == REPO / "prelude" / "prelude.fcl"
    assert prelude_path().exists()


# ---------------------------------------------------------------- paper programs


def test_paper_programs_check_with_their_sigs():
    got = types_of((CONFORMANCE / "paper.fcl").read_text())
    assert got == {
        "revBlock": "forall 'a. ['a] -> ['a]<block>",
        "revDistribute": "forall 'a. int -> ['a] -> ['a]<grid>",
        "transposeTiled": "forall 'a. int -> int -> int -> ['a] -> ['a]<grid>",
        "step": "forall 'a. <lvl> -> ('a -> 'a -> 'a) -> ['a] -> ['a]<lvl>",
        "red": "forall 'a. <lvl> -> ('a -> 'a -> 'a) -> ['a] -> ['a]<lvl>",
        "reduceGrid": "forall 'a. ('a -> 'a -> 'a) -> ['a] -> ['a]<grid>",
        "sumGrid": "[int] -> [int]<grid>",
    }


def test_paper_programs_infer_without_sigs():
    text = (CONFORMANCE / "paper.fcl").read_text()
    bare = "\n".join(line for line in text.splitlines() if not line.startswith("sig "))
    got = types_of(bare)
    assert got["revDistribute"] == "forall 'a. int -> ['a] -> ['a]<grid>"
    assert got["transposeTiled"] == "forall 'a. int -> int -> int -> ['a] -> ['a]<grid>"
    # the definition is more general than the paper's sig, which is accepted
    assert got["step"] == "forall 'a 'b. <lvl> -> ('a -> 'a -> 'b) -> ['a] -> ['b]<lvl>"
    assert got["red"] == "forall 'a. <lvl> -> ('a -> 'a -> 'a) -> ['a] -> ['a]<lvl>"


# ---------------------------------------------------------------- polymorphism


def test_let_polymorphism_id():
    assert types_of("val p = let id = fn x => x in (id 1, id true)") == {"p": "(int, bool)"}


def test_lambda_bound_is_monomorphic():
    err = error_of("val p = (fn id => (id 1, id true)) (fn x => x)")
    assert "bool" in err.message and "int" in err.message


def test_compose_and_twice():
    got = types_of("fun compose f g x = f (g x)\n"
                   "fun twice f x = f (f x)\n"
                   "val four = twice (fn x => x + 1) 2\n"
                   "val c = compose iota lengthPull\n"
                   "val dot = iota . lengthPull\n")
    assert got == {
        "compose": "forall 'a 'b 'c. ('a -> 'b) -> ('c -> 'a) -> 'c -> 'b",
        "twice": "forall 'a. ('a -> 'a) -> 'a -> 'a",
        "four": "int",
        "c": "forall 'a. ['a] -> [int]",
        "dot": "forall 'a. ['a] -> [int]",
    }


def test_pipe_is_reverse_application():
    assert types_of("fun f arr = arr |> reverse |> push <block>") == {
        "f": "forall 'a. ['a] -> ['a]<block>"}


def test_shadowing_prelude_and_earlier_declarations():
    got = types_of("fun reverse x = x + 1\nval a = reverse 2\nval a = true\nval b = a")
    assert got == {"reverse": "int -> int", "a": "bool", "b": "bool"}


def test_redeclaration_listed_in_order():
    checked = check_program(parse_program("val a = 1\nval a = true", "t.fcl"))
    assert [(n, format_scheme(s)) for n, s in checked.decls] == [("a", "int"), ("a", "bool")]


def test_env_carries_over_for_repl():
    first = check_program(parse_program("fun twice x = 2 * x", "t.fcl"))
    assert "reverse" in first.env and "twice" in first.env
    second = check_program(parse_program("val y = twice 21", "t.fcl"), first.env)
    assert {n: format_scheme(s) for n, s in second.schemes.items()} == {"y": "int"}
    assert type_of_expr("twice", first.env) == "int -> int"


def test_no_prelude_env():
    err = error_of("val x = iota 3", builtins_env())
    assert "unbound name `iota`" in err.message


# ---------------------------------------------------------------- numbers


def test_numeric_defaulting():
    got = types_of("fun f x = x + x\nfun g x = x * 2.0\nfun h x = sqrt x\n"
                   "fun k x = -x\nfun c x y = x < y\nfun e x y = x == y\nfun m x = x % 2")
    assert got == {"f": "int -> int", "g": "double -> double", "h": "double -> double",
                   "k": "int -> int", "c": "int -> int -> bool",
                   "e": "forall 'a. 'a -> 'a -> bool", "m": "int -> int"}


def test_inner_let_does_not_generalise_numeric_variables():
    assert types_of("val a = let g = fn x => x + x in g 1.5") == {"a": "double"}
    err = error_of("val a = let g = fn x => x + x in (g 1, g 1.5)")
    assert "double" in err.message and where(err) == (1, 42)


def test_sig_fixes_the_numeric_type():
    assert types_of("sig f : float -> float\nfun f x = x + x") == {"f": "float -> float"}


def test_hardware_parameters_are_int():
    assert type_of_expr("#BlockSize * #WarpSize + #NumGroups - #LocalMemory") == "int"


def test_literals():
    assert type_of_expr("(1, (2.5, (2.5f, [true])))") == "(int, (double, (float, [bool])))"


# ---------------------------------------------------------------- levels


def test_level_unification_through_succ():
    """`1+l` against `block` gives `l = warp`."""
    got = types_of("sig blk : [int]<block> -> int\nfun blk a = lengthPush a\n"
                   "fun k parts = blk (concat 4 parts)")
    assert got["k"] == "[[int]<warp>] -> int"


def test_level_unify_unit():
    sub = Subst()
    lv = sub.fresh_level(1)
    sub.unify(TPushT(INT, LSucc(lv)), TPushT(INT, BLOCK))
    assert sub.zonk_level(lv) == WARP


def test_level_abstraction_and_application():
    got = types_of("fun p <lvl> arr = push <lvl> (reverse arr)\nval q = p <warp>\n"
                   "val r = fn <x> => fn <y> => concat 2 (mapPull (p <x>) (splitUp 2 (iota 8)))")
    assert got["p"] == "forall 'a. <lvl> -> ['a] -> ['a]<lvl>"
    assert got["q"] == "forall 'a. ['a] -> ['a]<warp>"
    assert got["r"] == "<x> -> <y> -> [int]<1+x>"


def test_implicit_level_variables_are_quantified():
    got = types_of("fun lp a = lengthPush a\nfun both a b = lp a + lp b\n"
                   "fun grow parts = concat 4 parts")
    assert got["lp"] == "forall <l> 'a. ['a]<l> -> int"
    assert got["both"] == "forall <l> <l1> 'a 'b. ['a]<l> -> ['b]<l1> -> int"
    assert got["grow"] == "forall <l> 'a. [['a]<l>] -> ['a]<1+l>"


def test_while_and_force():
    got = types_of("fun loop arr = while (fn a => lengthPull a > 1) (fn a => push <block> (halve a |> fst)) "
                   "(push <block> arr)\nfun f2 arr = force (push <thread> arr)")
    assert got == {"loop": "forall 'a. ['a] -> ['a]", "f2": "forall 'a. ['a] -> ['a]"}


def test_nested_concat_up_to_grid():
    got = types_of("fun g parts = concat 2 (mapPull (concat 2) (mapPull (mapPull (concat 2)) parts))")
    assert got["g"] == "forall <l> 'a. [[[['a]<l>]]] -> ['a]<1+1+1+l>"
    assert types_of("fun g parts = concat 2 (mapPull (concat 2) (mapPull (mapPull (concat 2)) "
                    "(mapPull (mapPull (mapPull (push <thread>))) parts)))")["g"] == \
        "forall 'a. [[[['a]]]] -> ['a]<grid>"


def test_level_above_grid_conformance():
    err = error_of("fun ok arr = push <block> arr\nfun tooHigh arr = concat 4 (mapPull (push <grid>) arr)")
    assert err.span.line == 2 and "grid" in err.message


def test_level_above_grid_via_level_application():
    err = error_of("fun g <l> arr = concat 4 (mapPull (push <l>) arr)\nfun h arr = g <grid> arr")
    assert where(err) == (2, 13) and "grid" in err.message


def test_level_above_grid_with_a_variable():
    err = error_of("fun bad p = concat 2 (mapPull (concat 2) (mapPull (mapPull (concat 2)) "
                   "(mapPull (mapPull (mapPull (concat 2))) p)))")
    assert "grid" in err.message and "1+1+1+1+l" in err.message


def test_level_above_grid_in_sig():
    err = error_of("sig f : [int] -> [int]<1+grid>\nfun f a = push <grid> a")
    assert where(err) == (1, 24) and "grid" in err.message


def test_level_mismatch_message():
    err = error_of("sig blk : [int]<block> -> int\nfun blk a = lengthPush a\n"
                   "fun k parts = blk (concat 4 (mapPull (push <block>) parts))")
    assert where(err) == (3, 20)
    assert "expected [int]<block>, found [int]<grid>" in err.message
    assert "in the level of the push array" in err.message


def test_level_application_of_non_abstraction():
    err = error_of("fun f x = id <block> x")
    assert where(err) == (1, 11) and "not level-abstracted" in err.message


def test_level_abstraction_must_be_applied():
    err = error_of("fun f x = push x")
    assert where(err) == (1, 11) and "applied to a level first" in err.message
    err = error_of("fun f arr = mapPull push arr")
    assert where(err) == (1, 21) and any("level" in n for n in err.notes)


def test_unbound_level_variable():
    err = error_of("fun f x = push <lvl> x")
    assert where(err) == (1, 17) and "unbound level variable `lvl`" in err.message


def test_level_variable_escape():
    err = error_of("fun f p = fn <l> => if true then p else push <l> (iota 3)")
    assert where(err) == (1, 11) and "escapes" in err.message


def test_level_parameter_cannot_be_inferred():
    err = error_of("fun f g = g <block>")
    assert where(err) == (1, 11) and "level" in err.message


# ---------------------------------------------------------------- kinds


def test_push_of_pull_arrays_rejected():
    err = error_of("fun f arr = push <block> (splitUp 4 arr)")
    assert where(err) == (1, 27)
    assert "scalar" in err.message and "[['b]]" in err.message


def test_push_of_pairs_accepted():
    assert types_of("fun f arr = mapPush (fn x => (x, x)) (push <block> arr)")["f"] == \
        "forall 'a. ['a] -> [('a, 'a)]<block>"
    assert types_of("sig f : [((int, bool), float)]<block> -> int\nfun f a = lengthPush a")["f"] == \
        "[((int, bool), float)]<block> -> int"


def test_push_of_arrays_rejected():
    err = error_of("fun f arr = mapPush (fn x => [x]) (push <block> arr)")
    assert where(err) == (1, 22) and "scalar" in err.message and "['a]" in err.message


def test_push_of_arrays_in_sig_rejected():
    err = error_of("sig f : [(int, [int])]<block> -> int\nfun f a = lengthPush a")
    assert where(err) == (1, 16) and "scalars" in err.message and "pairs" in err.message


def test_pull_of_functions_rejected():
    err = error_of("fun f x = [fn y => y]")
    assert where(err) == (1, 12) and "function" in err.message
    err = error_of("fun f n = generate n (fn i => fn j => i + j)")
    assert "ground type" in err.message
    err = error_of("sig f : [int -> int] -> int\nfun f a = 0")
    assert where(err) == (1, 10) and "functions" in err.message


def test_pull_arrays_hold_pairs_and_arrays():
    got = types_of("fun pairs n = generate n (fn i => (i, [i]))\n"
                   "fun pushes arr = mapPull (push <block>) (splitUp 4 arr)")
    assert got["pairs"] == "int -> [(int, [int])]"
    assert got["pushes"] == "forall 'a. ['a] -> [['a]<block>]"


def test_equality_needs_scalars():
    err = error_of("fun f x = iota 3 == iota 4")
    assert where(err) == (1, 11) and "scalar" in err.message


# ---------------------------------------------------------------- signatures


def test_sig_more_specific_accepted():
    got = types_of("sig f : int -> int\nfun f x = x\nval y = f 3")
    assert got == {"f": "int -> int", "y": "int"}


def test_sig_more_general_rejected_at_the_expression_that_fixes_the_type():
    """The `1` makes `f` int-only: the error points there, the sig is a note."""
    err = error_of("val z = 0\nsig f : 'a -> 'a\nfun f x = x + 1")
    assert where(err) == (3, 15) and "more general" in err.message
    assert "without `1` (an int), the definition would have the signature's type" in err.notes
    assert [(text, span.line, span.col) for text, span in err.related] == [("the signature of `f`", 2, 1)]


def test_sig_type_variable_takes_the_kind_the_definition_needs():
    # inference accepts these; a sig with a plain 'a must too
    got = types_of("sig f : 'a -> 'a -> 'a\nfun f x y = x + y\nval d = f 1.5 2.0\n"
                   "sig eq : 'a -> 'a -> bool\nfun eq x y = x == y\nval b = eq true false\n"
                   "sig g : ['a] -> ['a]\nfun g arr = mapPull (fn x => x * x) arr")
    assert got["f"] == "forall 'a. 'a -> 'a -> 'a" and got["d"] == "double"
    assert got["eq"] == "forall 'a. 'a -> 'a -> bool" and got["b"] == "bool"
    assert got["g"] == "forall 'a. ['a] -> ['a]"


def test_sig_narrowed_kind_is_checked_at_uses():
    err = error_of("sig f : 'a -> 'a -> 'a\nfun f x y = x + y\nval w = f true false")
    assert "numeric" in err.message
    err = error_of("sig eq : 'a -> 'a -> bool\nfun eq x y = x == y\nval w = eq (fn x => x) (fn x => x)")
    assert "scalar" in err.message


def test_sig_too_general_prints_types_that_differ():
    for src, at in (("sig f : 'a -> 'a -> 'a\nfun f x y = x + y + 1", (2, 21)),      # the `1`
                    ("sig f : 'a -> 'b -> bool\nfun f x y = x == y", (1, 1)),
                    ("sig f : <l> -> ['a] -> ['a]<l>\nfun f <l> a = push <block> a", (2, 15))):
        err = error_of(src)
        assert where(err) == at, src
        said = err.message.split("signature says ")[1]
        sig_text, def_text = said.split(", but the definition ")
        assert sig_text != def_text.split("type ", 1)[1], err.message


def test_sig_mismatch_rejected_at_sig():
    err = error_of("sig f : int -> bool\nfun f x = x + 1")
    assert where(err) == (1, 1) and "does not match" in err.message
    assert any("in the result type of the function" in n for n in err.notes)


def test_sig_name_must_match_next_declaration():
    err = error_of("sig f : int -> int\nfun g x = x + 1")
    assert where(err) == (1, 1) and "`f`" in err.message and "`g`" in err.message
    err = error_of("val a = 1\nsig f : int -> int")
    assert where(err) == (2, 1) and "nothing follows" in err.message


def test_sig_bare_lowercase_are_type_variables():
    assert types_of("sig swap : (a, b) -> (b, a)\nfun swap p = (snd p, fst p)") == {
        "swap": "forall 'a 'b. ('a, 'b) -> ('b, 'a)"}


def test_sig_level_abstraction_alpha_equivalent():
    assert types_of("sig p : <k> -> [a] -> [a]<k>\nfun p <lvl> arr = push <lvl> arr") == {
        "p": "forall 'a. <k> -> ['a] -> ['a]<k>"}


def test_sig_level_abstraction_required():
    err = error_of("sig p : <k> -> [a] -> [a]<k>\nfun p arr = push <block> arr")
    assert where(err) == (1, 1)


# ---------------------------------------------------------------- located errors


def test_unbound_name():
    err = error_of("fun f x = y")
    assert where(err) == (1, 11) and "unbound name `y`" in err.message


def test_unbound_name_suggestion():
    err = error_of("fun f arr = lenghtPull arr")
    assert where(err) == (1, 13) and "did you mean `lengthPull`" in err.message


def test_unbound_hardware_parameter():
    err = error_of("fun f x = #BlockSiz")
    assert where(err) == (1, 11) and "unbound" in err.message and "#BlockSize" in err.message


def test_operand_mismatch_conformance():
    err = error_of("fun g x =\n  1 + true")
    assert where(err) == (2, 7)
    assert "expected int, found bool" in err.message


def test_recursion_rejected():
    err = error_of("fun h x = h x")
    assert where(err) == (1, 11) and "recursi" in err.message
    err = error_of("fun reverse x = reverse x")
    assert "recursi" in err.message


def test_recursion_check_respects_local_binders():
    assert types_of("fun h h = h + 1") == {"h": "int -> int"}
    assert types_of("fun k x = let k = x in k") == {"k": "forall 'a. 'a -> 'a"}


def test_argument_mismatch_with_breadcrumb():
    err = error_of("fun f arr = mapPull (fn x => x + 1) (generate 3 (fn i => true))")
    assert where(err) == (1, 38)
    assert "second argument of `mapPull`" in err.message
    assert "in the element type of the pull array: expected int, found bool" in err.message


def test_piped_argument_mismatch():
    err = error_of("fun f arr = 3 |> reverse")
    assert where(err) == (1, 13) and "piped" in err.message


def test_too_many_arguments():
    err = error_of("fun f x = iota 3 4")
    assert where(err) == (1, 11) and "too many arguments" in err.message


def test_not_a_function():
    err = error_of("fun f x = 3 4")
    assert where(err) == (1, 11) and "not a function" in err.message


def test_if_errors():
    err = error_of("fun f x = if 1 then 1 else 2")
    assert where(err) == (1, 14) and "bool" in err.message
    err = error_of("fun f x = if x then 1 else true")
    assert where(err) == (1, 28) and "expected int, found bool" in err.message


def test_array_literal_mismatch():
    err = error_of("val a = [1, 2, true]")
    assert where(err) == (1, 16) and "expected int, found bool" in err.message


def test_infinite_type():
    err = error_of("fun f x = x x")
    assert where(err) == (1, 13) and "infinite" in err.message


def test_int_only_operators():
    err = error_of("fun f x = 1.5 % 2.0")
    assert where(err) == (1, 11) and "int" in err.message and "double" in err.message
    err = error_of("fun f x = true && 1")
    assert where(err) == (1, 19) and "bool" in err.message


def test_float_functions_reject_int():
    err = error_of("fun f x = sqrt 2")
    assert where(err) == (1, 16) and "floating-point" in err.message


def test_composition_mismatch():
    err = error_of("fun f x = (reverse . lengthPull) x")
    assert where(err) == (1, 22) and "`.`" in err.message


def test_error_renders_with_location():
    err = error_of("fun f x = y")
    assert err.render().startswith("test.fcl:1:11: error: unbound name `y`")


@pytest.mark.skipif(not (CONFORMANCE / "errors.fcl").exists(), reason="no conformance suite")
def test_conformance_error_parts():
    """errors.fcl: each part fails at its LINE with WORD in the message (type errors only)."""
    from fcl.base.errors import FCLError
    lines = (CONFORMANCE / "errors.fcl").read_text().splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith("-- expect:")]
    for k, s in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        line, word = lines[s].split(":", 1)[1].split(None, 1)
        with pytest.raises(FCLError) as info:
            check_program(parse_program("\n".join(lines[s:end]) + "\n", "part.fcl"))
        assert info.value.span.line == int(line), lines[s]
        assert word.strip().lower() in info.value.render().lower(), lines[s]


# ---------------------------------------------------------------- printer


def test_printer_parentheses_and_levels():
    t = type_from_ast(parse_program("sig x : ((a -> b) -> [(a, b)]) -> <k> -> [[int]<1+k>] -> [int]<grid> "
                                     "-> (<m> -> int) -> int\nval x = 0", "t").decls[0].scheme.body,
                       frozenset())
    assert format_type(t) == \
        "(('a -> 'b) -> [('a, 'b)]) -> <k> -> [[int]<1+k>] -> [int]<grid> -> (<m> -> int) -> int"


def test_printer_renames_in_order_of_appearance():
    s = Scheme(("l9#4",), ("zz", "yy"), TPushT(TVarT("yy"), LVarT("l9#4")))
    assert format_scheme(s) == "forall <l9> 'a. ['a]<l9>"
    assert str(Scheme((), (), INT)) == "int"


def test_levels_print_by_name():
    assert format_type(TPushT(INT, GRID)) == "[int]<grid>"
    assert format_type(TPushT(INT, LSucc(GRID))) == "[int]<1+grid>"


# ---------------------------------------------------------------- timing


def _program_of_200_lines() -> str:
    blocks = []
    for i in range(25):
        blocks.append(
            f"sig rev{i} : int -> [a] -> [a]<grid>\n"
            f"fun rev{i} c arr = splitUp c arr |> mapPull (fn a => push <block> (reverse a))"
            f" |> reverse |> concat c\n"
            f"fun step{i} <lvl> f arr = let x = halve arr in push <lvl> (zipWith f (fst x) (snd x))\n"
            f"fun red{i} <lvl> f arr = while (fn a => 1 != lengthPull a) (step{i} <lvl> f)\n"
            f"  (step{i} <lvl> f arr) |> push <lvl>\n"
            f"fun sum{i} arr = splitUp (2 * #BlockSize) arr |> mapPull (red{i} <block> (fn a => fn b => a + b))"
            f" |> concat 1\n"
            f"fun tt{i} t c r m = split2DGrid t c r m |> mapPull (force . push <block>)\n"
            f"  |> mapPull (transpose t t) |> transpose (c / t) (r / t) |> mapPull (push <block>) |> concat2DGrid t r\n")
    return "".join(blocks)


def test_timing_prelude_plus_200_lines(capsys):
    """Printed, not asserted: parse+check of the prelude and of a 200-line program."""
    src = _program_of_200_lines()
    assert len(src.splitlines()) == 200
    t0 = time.perf_counter()
    prelude = check_program(parse_program(prelude_path().read_text(), "prelude.fcl"), builtins_env())
    t1 = time.perf_counter()
    program = parse_program(src, "big.fcl")
    t2 = time.perf_counter()
    checked = check_program(program, prelude.env)
    t3 = time.perf_counter()
    assert format_scheme(checked.schemes["sum24"]) == "[int] -> [int]<grid>"
    with capsys.disabled():
        print(f"\n[timing] prelude parse+check {1000 * (t1 - t0):.1f} ms; 200-line program parse "
              f"{1000 * (t2 - t1):.1f} ms, check {1000 * (t3 - t2):.1f} ms; total "
              f"{1000 * (t3 - t0):.1f} ms")


# ---------------------------------------------------------------- more forms


def test_let_bound_level_abstraction_is_polymorphic():
    got = types_of("val q = let s = fn <l> => fn a => push <l> a\n"
                   "        in (lengthPush (s <block> (iota 3)), lengthPush (s <warp> [true]))")
    assert got == {"q": "(int, int)"}


def test_sig_with_forall_and_value_declarations():
    got = types_of("sig f : forall 'a. 'a -> 'a\nval f = fn x => x\n"
                   "sig p : <k> -> [a] -> [a]<k>\nval p = push")
    assert got == {"f": "forall 'a. 'a -> 'a", "p": "forall 'a. <k> -> ['a] -> ['a]<k>"}


def test_sig_level_is_not_bound_in_body_hint():
    err = error_of("sig step : <lvl> -> (a -> a -> a) -> [a] -> [a]<lvl>\n"
                   "fun step f arr = let x = halve arr in push <lvl> (zipWith f (fst x) (snd x))")
    assert where(err) == (2, 45) and "unbound level variable" in err.message
    assert any("fun step <lvl>" in n for n in err.notes)


def test_polymorphic_equality_in_let():
    assert types_of("val e = let eq = fn x => fn y => x == y in (eq 1 2, eq true false)") == {
        "e": "(bool, bool)"}
