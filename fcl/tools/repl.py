"""`fclc repl`: an interactive session over the reference evaluator (interface.md, "The REPL").

`Session.handle(text) -> str` is the whole REPL without a terminal: it takes
one complete input (a declaration block, an expression or a `:command`) and
returns what to print.  A mistake is rendered with `FCLError.render()`, never
as a traceback.  `needs_more(text)` decides whether an input continues on the
next line.  `run_repl(args)` is the terminal front end: prompt_toolkit on a
TTY (history, completion, multi-line editing), plain lines from stdin
otherwise.  It does not try to be a debugger: no stepping, no breakpoints.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from fcl.api.literals import format_value, parse_arg
from fcl.api.program import hardware, load, load_file
from fcl.base.errors import ArgumentError, CompilerBug, EnvironmentProblem, FCLError, ParseError
from fcl.base.resources import prelude_path
from fcl.syntax import ast as A
from fcl.syntax import expand_includes, parse_expr, parse_program
from fcl.types import check_expr, format_scheme
from fcl.types import terms as T
from fcl.types.builtins import HARDWARE_PARAMETERS, PRIMITIVES

SOURCE = "<input>"
HISTORY = Path("~/.fcl_history")

COMMANDS = {
    "type": ("EXPR", "the type scheme of an expression"),
    "load": ("FILE", "load a .fcl file (replaces the session's file; forgets declarations typed here)"),
    "reload": ("", "load the session's file again (forgets declarations typed here)"),
    "opencl": ("NAME", "the OpenCL C of the kernels compiled for a declaration"),
    "run": ("NAME ARGS", "compile NAME and run it on the OpenCL device (ARGS as for `fclc run`)"),
    "cost": ("EXPR", "evaluate and print work, span, memory traffic and barriers"),
    "browse": ("", "every name in scope with its type (`:browse TEXT`: the names containing TEXT)"),
    "doc": ("NAME", "the type, description and origin of a primitive, prelude or declared name"),
    "help": ("", "this text"),
    "quit": ("", "leave the REPL (Ctrl-D does too)"),
}

HELP = "\n".join(
    ["Type an expression to evaluate it, or declarations (`sig`, `fun`, `val`, `include`) to add them.",
     "An input continues on the next line after a trailing `\\`, with unclosed brackets, an",
     "unfinished `let`/`if`, or a trailing `=`, `=>`, `in`, `then`, `else`, `|>` or operator;",
     "an empty line ends it.  Ctrl-C cancels the input, Ctrl-D leaves.  Commands (any unique",
     "prefix works, e.g. `:t`):"]
    + [f"  :{name + ' ' + arg if arg else name:<16} {text}" for name, (arg, text) in COMMANDS.items()])

DECL_START = re.compile(r"(?:\s*--[^\n]*\n)*\s*(?:sig|fun|val|include)(?![A-Za-z0-9_'])")


class Quit(Exception):
    """Raised inside `Session` by `:quit`; `handle` turns it into `session.done`."""


class Session:
    """The state of one REPL: the loaded file, declarations typed so far, a type env
    and an evaluator.  `handle(text) -> str` runs one complete input."""

    def __init__(self, file: str | None = None, prelude: bool = True, hw: dict | None = None,
                 device: str | None = None, seed: int | None = None, local_memory: int | None = None):
        self.prelude = prelude
        self.hw = dict(hw) if hw else hardware()
        self.local_memory = local_memory        # #LocalMemory for compiled kernels (None: the device's)
        self.device = device
        self.seed = seed
        self.file = file
        self.done = False
        self._reset_to_file(None)
        self.startup_message = ""
        if file is not None:
            self.startup_message = self._guard(lambda: self._load(file))

    @classmethod
    def from_args(cls, args) -> "Session":
        """The `fclc repl` options (file, --no-prelude, hardware, --device, --seed) -> Session."""
        hw = hardware(args.block_size, args.warp_size, args.num_groups, args.local_memory)
        return cls(args.file, prelude=not args.no_prelude, hw=hw, device=args.device, seed=args.seed,
                   local_memory=args.local_memory)

    # ------------------------------------------------------------ state

    def _reset_to_file(self, program) -> None:
        """Make `program` (a facade Program, or None for no file) the session's base."""
        if program is None:
            program = load("", SOURCE, prelude=self.prelude)
        self._program = program         # the facade Program of the file and the session
        self.pending_sig = None         # a `sig` typed alone, waiting for its `fun`/`val`
        self._kernels: dict = {}

    @property
    def env(self):
        """The type environment of everything declared so far."""
        return self._program.checked.env

    @property
    def evaluator(self):
        return self._program.evaluator(self.hw)

    def _load(self, path: str) -> str:
        program = load_file(path, prelude=self.prelude)
        self.file = path
        self._reset_to_file(program)
        n = len(program.names())
        return f"loaded {path} ({n} declaration{'s' * (n != 1)})"

    def names(self) -> list[str]:
        """Every name visible at the prompt (primitives, prelude, file, session), sorted."""
        return sorted(set(self.env.names()))

    def program(self):
        """The facade Program of the file's and the session's declarations."""
        return self._program

    def kernel(self, name: str):
        if name not in self._kernels:
            self._kernels[name] = self.program().compile(
                name, block_size=self.hw["#BlockSize"], warp_size=self.hw["#WarpSize"],
                num_groups=self.hw["#NumGroups"], device=self.device, local_memory=self.local_memory)
        return self._kernels[name]

    # ------------------------------------------------------------ input

    def handle(self, text: str) -> str:
        """One complete input -> the text to print ('' for nothing).  Never raises."""
        return self._guard(lambda: self._dispatch(join_continuations(text)))

    def _guard(self, action) -> str:
        try:
            return action()
        except KeyboardInterrupt:
            return "interrupted (the session keeps everything declared before this input)"
        except Quit:
            self.done = True
            return ""
        except FCLError as e:
            return e.render()
        except EnvironmentProblem as e:
            return f"error: {e}"
        except CompilerBug as e:
            return f"internal compiler error (a bug in FCL, please report it): {e}"
        except RecursionError:
            return "error: the input nests too deeply for this implementation"
        except Exception as e:  # noqa: BLE001 - the REPL must survive anything
            return f"internal error (a bug in FCL, please report it): {type(e).__name__}: {e}"

    def _dispatch(self, text: str) -> str:
        stripped = text.strip()
        if not stripped:
            return ""
        if stripped.startswith(":"):
            return self._command(stripped)
        try:
            if DECL_START.match(text):
                return self._declare(text)
            return self._evaluate(text, cost=False)
        except ParseError as e:
            e.notes.extend(argument_syntax_hints(text))
            raise

    def _command(self, text: str) -> str:
        word, rest = split_command(text)
        name = command_named(word)
        if COMMANDS[name][0] and not rest:
            return f"error: :{name} needs {COMMANDS[name][0]}; see :help"
        return getattr(self, "cmd_" + name)(rest)

    # ------------------------------------------------------------ declarations and expressions

    def _declare(self, text: str) -> str:
        """Declarations -> checked against the session's program, which they extend."""
        program = expand_includes(parse_program(text, SOURCE), SOURCE)
        decls = tuple(program.decls)
        notes = []
        if self.pending_sig is not None:
            first = decls[0] if decls else None
            if isinstance(first, A.Val) and first.name != self.pending_sig.name:
                notes.append(f"(the pending `sig {self.pending_sig.name}` was dropped: the next "
                             f"declaration defines `{first.name}`, not `{self.pending_sig.name}`)")
            elif isinstance(first, A.Sig):
                notes.append(f"(the pending `sig {self.pending_sig.name}` was replaced by "
                             f"`sig {first.name}`)")
            else:
                decls = (self.pending_sig,) + decls
            self.pending_sig = None
        trailing = None
        if decls and isinstance(decls[-1], A.Sig):
            trailing, decls = decls[-1], decls[:-1]
        before = len(self._program.checked.decls)
        self._program = self._program.extend(decls)
        self.pending_sig = trailing
        self._kernels.clear()
        lines = notes + [f"{name} : {format_scheme(scheme)}"
                         for name, scheme in self._program.checked.decls[before:]]
        if trailing is not None:
            lines.append(f"(sig {trailing.name} waits for its `fun {trailing.name} ...` or "
                         f"`val {trailing.name} = ...`)")
        return "\n".join(lines)

    def _typed_expr(self, text: str):
        expr = parse_expr(text, SOURCE)
        return expr, check_expr(expr, self.env)

    def _evaluate(self, text: str, cost: bool) -> str:
        expr, scheme = self._typed_expr(text)
        if isinstance(scheme.body, (T.TFunT, T.TLevelFunT)):
            return f"<function> : {format_scheme(scheme)}"
        value, report = self.evaluator.eval_expr(expr, cost=cost)
        shown = format_value(value)
        return shown + "\n" + report.format() if cost and report is not None else shown

    # ------------------------------------------------------------ commands

    def cmd_type(self, rest: str) -> str:
        _, scheme = self._typed_expr(rest)
        return f"{' '.join(rest.split())} : {format_scheme(scheme)}"

    def cmd_cost(self, rest: str) -> str:
        try:
            out = self._evaluate(rest, cost=True)
        except ParseError as e:
            e.notes.extend(argument_syntax_hints(rest))
            raise
        return out + "\n" + COST_NOTE if "\n" in out else out

    def cmd_load(self, rest: str) -> str:
        return self._load(os.path.expanduser(rest))

    def cmd_reload(self, rest: str) -> str:
        if self.file is None:
            return "error: no file loaded (use :load FILE)"
        return self._load(self.file)

    def cmd_opencl(self, rest: str) -> str:
        return "\n".join(self.kernel(name).opencl_source.rstrip("\n") for name in rest.split())

    def cmd_run(self, rest: str) -> str:
        name, _, args_text = rest.partition(" ")
        values = [parse_arg(a, seed=self.seed, position=k + 1)
                  for k, a in enumerate(split_args(args_text))]
        return format_value(self.kernel(name)(*values))

    def cmd_browse(self, rest: str) -> str:
        groups: dict[str, list[str]] = {}
        for name in self.env.names():
            if rest in name:
                scheme = format_scheme(self.env.lookup(name))
                groups.setdefault(self._origin(name)[0], []).append(f"{name} : {scheme}")
        if rest in " ".join(HARDWARE_PARAMETERS):
            groups["hardware parameters"] = [f"{h} : int = {self.hw[h]}" for h in HARDWARE_PARAMETERS
                                             if rest in h]
        if not any(groups.values()):
            return f"no name in scope contains `{rest}`"
        order = ["primitives", "hardware parameters", "prelude", self.file or "", "typed at the prompt"]
        return "\n".join(f"-- {title}\n" + "\n".join(groups[title])
                         for title in order if groups.get(title))

    def cmd_doc(self, rest: str) -> str:
        name = rest.strip()
        if name in HARDWARE_PARAMETERS:
            return f"{name} : int = {self.hw[name]}\na hardware parameter, fixed when a kernel is compiled"
        scheme = self.env.lookup(name)
        if scheme is None:
            self._program.scheme(name)          # raises with a did-you-mean
            raise ArgumentError(f"no name `{name}` in scope")
        origin, where, text = self._origin(name)
        if origin == "primitives":
            text, where = PRIMITIVES[name][1], "a primitive (built in)"
        lines = [f"{name} : {format_scheme(scheme)}"]
        lines += [text] if text else ["(no description: write `-- ...` comment lines above its `sig`)"]
        lines.append(where)
        return "\n".join(lines)

    def _origin(self, name: str) -> tuple[str, str, str]:
        """(group, `declared at FILE:LINE`, doc comment) of the newest declaration of `name`."""
        decls = self._program.decls
        for k in range(len(decls) - 1, -1, -1):
            if isinstance(decls[k], A.Val) and decls[k].name == name:
                before = decls[k - 1] if k else None
                sig = before if isinstance(before, A.Sig) and before.name == name else None
                span = (sig or decls[k]).span
                source = span.source.name
                if source == SOURCE:
                    return "typed at the prompt", "declared at the prompt", doc_comment(span)
                group = "prelude" if source == str(prelude_path()) else self.file or source
                return group, f"declared at {span.location().rsplit(':', 1)[0]}", doc_comment(span)
        return "primitives", "a primitive (built in)", ""

    def cmd_help(self, rest: str) -> str:
        return HELP

    def cmd_quit(self, rest: str) -> str:
        raise Quit()


# ---------------------------------------------------------------- input shape

def doc_comment(span) -> str:
    """The `--` comment lines directly above the line where `span` starts, without `-- `."""
    lines = []
    line = span.line - 1
    while line >= 1:
        text = span.source.line_text(line).strip()
        if not text.startswith("--") or text.startswith("-- =="):
            break
        lines.append(text[2:].strip())
        line -= 1
    return "\n".join(reversed(lines))


COST_NOTE = ("note: arrays written in the expression (`[1, 2]`, `iota n`) are not global buffers "
             "here: reading them is not counted; `fclc eval FILE -e NAME ARG... --cost` and "
             "`fclc run` pass arguments in global buffers and count those reads")

_CLI_ARG = re.compile(r"(?<![A-Za-z0-9_'])(iota|random):(\d+)(?::(int|double|float|bool))?")


def argument_syntax_hints(text: str) -> list[str]:
    """Notes for command-line argument syntax (`iota:16`, `random:8:double`) typed as FCL."""
    hints = []
    for m in _CLI_ARG.finditer(text):
        if m.group(1) == "iota":
            hints.append(f"`{m.group(0)}` is command-line argument syntax (for `fclc eval`/`run` and "
                         f"`:run`); in an expression write `iota {m.group(2)}`")
        else:
            hints.append(f"`{m.group(0)}` is command-line argument syntax: use it with `:run NAME "
                         f"{m.group(0)}` or `fclc eval`; expressions have no random numbers")
    return hints


def split_command(text: str) -> tuple[str, str]:
    """`:word rest...` -> (word, rest stripped)."""
    m = re.match(r":([^\s]*)\s*(.*)", text.strip(), re.S)
    return m.group(1), m.group(2).strip()


def command_named(word: str) -> str:
    """`:word` -> the full command name (exact name or unique prefix), or ArgumentError."""
    word = "help" if word == "?" else word
    if word in COMMANDS:
        return word
    matches = [c for c in COMMANDS if word and c.startswith(word)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ArgumentError(f"`:{word}` is ambiguous: {', '.join(':' + m for m in matches)}")
    raise ArgumentError(f"unknown command `:{word}`; the commands are "
                        f"{', '.join(':' + c for c in COMMANDS)}")


def join_continuations(text: str) -> str:
    """Remove the `\\` that ends a continued line (the line break stays, so lines keep their numbers)."""
    return re.sub(r"\\[ \t]*(?=\n|$)", " ", text)


_TOKEN = re.compile(r"""[A-Za-z][A-Za-z0-9_']*|\#[A-Za-z][A-Za-z0-9_']*|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?f?
                        |\|>|\|\||&&|==|!=|<=|>=|<<|>>|=>|->|[-+*/%<>=|^&.:,()\[\]]|\S""", re.X)
_OPERATORS = {"|>", "||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "<", ">", "|", "^", "&",
              "+", "-", "*", "/", "%", ".", "div", "mod", "not", "=", "=>", "->", ":", ",",
              "in", "then", "else", "let", "if", "fn"}
_LEVEL_CLOSE = re.compile(r"<\s*(?:1\s*\+\s*)*[A-Za-z][A-Za-z0-9_']*\s*>\s*$")


def strip_comments(text: str) -> tuple[str, bool]:
    """Text -> (text with comments and strings blanked, whether a `(*` comment is unclosed)."""
    out, i, depth = [], 0, 0
    while i < len(text):
        two = text[i:i + 2]
        if depth:
            depth += (two == "(*") - (two == "*)")
            i += 2 if two in ("(*", "*)") else 1
        elif two == "(*":
            depth, i = 1, i + 2
        elif two == "--":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        elif text[i] == '"':
            end = text.find('"', i + 1)
            i = len(text) if end < 0 else end + 1
            out.append('""')
        else:
            out.append(text[i])
            i += 1
    return "".join(out), depth > 0


def needs_more(text: str) -> bool:
    """Whether an input continues on the next line: a trailing `\\`, an unclosed comment or
    bracket, more `let` than `in` or `if` than `else`, or a last token that cannot end it
    (`=`, `=>`, `in`, `then`, `else`, `|>`, an operator; not a level `<l>`)."""
    if re.search(r"\\[ \t]*$", text):
        return True
    if text.lstrip().startswith(":"):
        word = split_command(text)[0]
        if not any(c.startswith(word) for c in ("type", "cost", "run")) or not word:
            return False
    code, open_comment = strip_comments(text)
    if open_comment:
        return True
    tokens = _TOKEN.findall(code)
    if not tokens:
        return False
    depth = sum((t in "([") - (t in ")]") for t in tokens if len(t) == 1)
    if depth > 0:
        return True
    if tokens.count("let") > tokens.count("in") or tokens.count("if") > tokens.count("else"):
        return True
    last = tokens[-1]
    if last == ">" and _LEVEL_CLOSE.search(code):
        return False
    return last in _OPERATORS


def split_args(text: str) -> list[str]:
    """`:run` argument text -> one string per argument (white space outside brackets splits)."""
    args, depth, current = [], 0, []
    for ch in text:
        depth += (ch in "([") - (ch in ")]")
        if ch.isspace() and depth <= 0:
            if current:
                args.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        args.append("".join(current))
    return args


# ---------------------------------------------------------------- front ends

def run_repl(args) -> int:
    """`fclc repl [FILE]`: prompt_toolkit on a terminal, plain stdin lines otherwise; exit 0."""
    session = Session.from_args(args)
    if session.startup_message:
        print(session.startup_message)
    if sys.stdin.isatty() and sys.stdout.isatty():
        interactive(session)
    else:
        piped(session, sys.stdin)
    return 0


def piped(session: Session, lines) -> None:
    """Read inputs from an iterable of lines (no prompts); print each result."""
    buffer: list[str] = []
    for line in lines:
        line = line.rstrip("\n")
        if buffer and not line.strip():
            emit(session, "\n".join(buffer))
            buffer = []
        elif line.strip() or buffer:
            buffer.append(line)
            if not needs_more("\n".join(buffer)):
                emit(session, "\n".join(buffer))
                buffer = []
        if session.done:
            return
    if buffer:
        emit(session, "\n".join(buffer))


def emit(session: Session, text: str) -> None:
    out = session.handle(text)
    if out:
        print(out, flush=True)


def interactive(session: Session, **io) -> None:
    """The prompt_toolkit loop: `fcl> `, `...> `, history, completion of names and commands.
    `io`: prompt_toolkit's `input` and `output` (tests)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()
    names = completer(session)

    @bindings.add("tab")
    def _(event):
        tab_complete(event.current_buffer, names)

    @bindings.add("enter")
    def _(event):
        buf = event.current_buffer
        text = buf.document.text
        last_line_empty = "\n" in text and not buf.document.current_line.strip()
        if buf.document.is_cursor_at_the_end and needs_more(text) and not last_line_empty:
            buf.insert_text("\n")
        else:
            buf.validate_and_handle()

    prompt = PromptSession(history=open_history(), completer=names, key_bindings=bindings,
                           multiline=True, prompt_continuation=lambda width, line, wrap: "...> ", **io)
    print("FCL REPL; :help for help, :quit or Ctrl-D to leave")
    while not session.done:
        try:
            text = prompt.prompt("fcl> ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        emit(session, text)


def tab_complete(buf, names) -> None:
    """Tab as in Python's REPL: one candidate completes the word at once; several complete
    their common part, else open the menu (a Tab more goes through it).  The candidates are
    worked out here, not by prompt_toolkit's own Tab, which drops its request while the
    completion started by typing is still running, so that a quick Tab only opened the
    menu and Enter then ran the unfinished word."""
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.completion.base import get_common_complete_suffix
    state = buf.complete_state
    if state is not None and state.complete_index is not None:
        buf.complete_next()                    # going through the open menu
        return
    found = list(names.get_completions(buf.document, CompleteEvent(completion_requested=True)))
    if len(found) == 1:
        buf.apply_completion(found[0])
        return
    common = get_common_complete_suffix(buf.document, found) if found else ""
    if common:
        buf.insert_text(common)
    elif found and state is not None:
        buf.complete_next()
    elif found:
        buf.start_completion(select_first=False)


def completer(session: Session):
    """A completer of the session's visible names and the `:commands`; silent on an empty word."""
    from prompt_toolkit.completion import Completer, WordCompleter

    word = re.compile(r"([A-Za-z0-9_'#:]+)")
    words = WordCompleter(lambda: session.names() + [":" + c for c in COMMANDS], pattern=word)

    class NonEmpty(Completer):
        def get_completions(self, document, event):
            if document.get_word_before_cursor(pattern=word):
                yield from words.get_completions(document, event)
    return NonEmpty()


def open_history():
    """FileHistory in ~/.fcl_history, or an in-memory history when that cannot be written."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    path = HISTORY.expanduser()
    try:
        with open(path, "a", encoding="utf-8"):
            pass
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()
