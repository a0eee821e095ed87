"""FCL concrete syntax: parsing, printing and loading programs.

parse_program/parse_expr/parse_scheme: text -> AST (ParseError on bad input);
print_*: AST -> text that parses back to an equal AST;
load_program: a file path -> Program with `include`s expanded;
expand_includes: (Program, path it came from) -> Program with `include`s expanded.
"""
from fcl.syntax.loader import expand_includes, load_program
from fcl.syntax.parser import parse_expr, parse_program, parse_scheme
from fcl.syntax.pretty import print_expr, print_level, print_program, print_scheme, print_type

__all__ = ["parse_program", "parse_expr", "parse_scheme", "print_program", "print_expr",
           "print_type", "print_scheme", "print_level", "load_program", "expand_includes"]
