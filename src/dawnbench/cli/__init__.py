"""The `dawnbench` command: a thin layer over the Python API, one module per command family.

* ``training``     run (also on many workers under torchrun), sweep
* ``scaling``      scale, schedule
* ``inference``    infer
* ``results``      export, analyze, compare, report, check-log, validate, leaderboard
* ``utilisation``  profile, machine, similarity, roofline, classes
* ``kernels``      kernels (DeepBench's GEMM, convolution, RNN, all-reduce)
* ``prediction``   explain, predict (an application's step as its kernels see it; on another device)
* ``catalog``      data fetch/list, tasks, prices

Exit codes: 0 every run reached its target (or the command succeeded); 1 some run
did not; 2 bad input (the message says what to fix); 130 interrupted.

Nothing a user or a file supplies is read as Rich markup or acted on as terminal control: both
consoles print text as it is (``markup=False``), with its control characters written out
(``common.ShownConsole``: ESC as ``\\x1b``), and the few styled words are styled explicitly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from rich.text import Text

from dawnbench import __version__, bounds, replacing_nothing
from dawnbench.cli import (
    catalog,
    inference,
    kernels,
    prediction,
    results,
    scaling,
    training,
    utilisation,
)
from dawnbench.cli.common import EXIT_BAD_INPUT, EXIT_INTERRUPTED, ShownConsole, int_list
from dawnbench.errors import DawnbenchError, clipped, printable


def _said(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` whose ValueError argparse repeats in its words (its own says only "invalid int value")."""
    def typed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return typed


class Parser(argparse.ArgumentParser):
    """argparse with a one-paragraph error (no usage block): what is wrong, and where the options are; an option
    of ``type=int`` or ``float`` reads ASCII digits only (``bounds.parse_int``: Python's own reads "٣" as 3)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("type", int, _said(bounds.parse_int))
        self.register("type", float, _said(bounds.parse_float))

    def error(self, message: str) -> NoReturn:
        self._refuse(f"error: {self.prog}: {message}. See `{self.prog} --help`.")

    def _refuse(self, paragraph: str) -> NoReturn:
        """Exit 2 with one line: what argparse quotes of the command line written out (controls, newlines)."""
        self.exit(EXIT_BAD_INPUT, printable(paragraph, one_line=True) + "\n")

    def parse_args(self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
                   ) -> argparse.Namespace:
        """As argparse's, with "did you mean" for a misspelt option (argparse's own suggestions came in
        Python 3.14)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = " ".join(filter(None, [self.prog, getattr(parsed, "command", None)]))
            self._refuse(f"error: {command}: unrecognized arguments: {' '.join(extras)}."
                         f"{_suggestions(self, parsed, extras)} See `{command} --help`.")
        return parsed

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):  # noqa: ANN202 - argparse's own
        # `--seed=--` would reach the command as an empty list, past the option's type (Python < 3.12)
        if action.nargs is None and arg_strings == ["--"]:
            self.error(f"argument {'/'.join(action.option_strings)}: expected a value, not '--'")
        return super()._get_values(action, arg_strings)


# Words users reach for that are not options, and the option that does it.
SYNONYMS = {"--seeds": "--runs", "--repeats": "--runs", "--trials": "--runs", "--epochs": "--max-epochs",
            "--time-limit-s": "--max-seconds", "--gpus": "--nproc", "--workers": "--nproc"}


def _suggestions(parser: argparse.ArgumentParser, parsed: argparse.Namespace, extras: list[str]) -> str:
    """" --x: did you mean …?" for the unknown options of the command given (or of dawnbench itself)."""
    import difflib

    command = getattr(parsed, "command", None)
    commands = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
    known = [o for a in (commands[command] if command in commands else parser)._actions for o in a.option_strings
             if o.startswith("--")]
    hints = []
    for word in (e.split("=", 1)[0] for e in extras if e.startswith("--")):
        close = difflib.get_close_matches(word, known, n=2, cutoff=0.8)
        if SYNONYMS.get(word) in known and SYNONYMS[word] not in close:
            close.append(SYNONYMS[word])
        if close:
            hints.append(f"{word}: did you mean {' or '.join(close)}?")
    return (" " + " ".join(hints)) if hints else ""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="dawnbench", description="Time-to-accuracy benchmarking.")
    parser.add_argument("--version", action="version", version=f"dawnbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in (training, scaling, inference, results, utilisation, kernels, prediction, catalog):
        family.register(sub)
    _bound(parser)
    return parser


def _bound(parser: argparse.ArgumentParser) -> None:
    """Each option of the bounds table (bounds.OPTIONS) a command has: its range written into its help,
    and the command told to check it once parsed (:func:`main`) — the same range in every command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                _bound(command)
    bounded = [(action.dest, flag) for action in parser._actions for flag in action.option_strings
               if flag in bounds.OPTIONS]
    for dest, flag in bounded:
        action = next(a for a in parser._actions if a.dest == dest)
        action.help = f"{action.help or flag} ({bounds.OPTIONS[flag].text()}{', each' if action.type is int_list else ''})"
    if bounded:
        parser.set_defaults(bounded_options=bounded)


# PyTorch's switches read from the environment as booleans: it ignores any value but 0 and 1 with a raw warning, and
# one that is not UTF-8 stops its first tensor with a UnicodeDecodeError. Checked before any command imports it.
TORCH_SWITCHES = {"THP_MEM_ALLOC_ENABLE": "huge pages for its large CPU tensors (docs/rules.md)"}


def _check_environment() -> None:
    for name, what in TORCH_SWITCHES.items():
        value = os.environ.get(name)
        if value and value not in ("0", "1"):
            raise DawnbenchError(f"the environment's {name} is {clipped(repr(value))}: PyTorch reads only 1 ({what}) "
                                 "or 0 there. Set it to 1 or 0, or unset it.")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)  # what `run --nproc` re-runs under torchrun
    # stdout stays pure JSON under --json; piped output gets room for the wide tables.
    out = ShownConsole(stderr=getattr(args, "json", False), width=None if sys.stdout.isatty() else 160)
    err = ShownConsole(stderr=True)
    try:
        _check_environment()
        for dest, flag in getattr(args, "bounded_options", ()):   # before any work starts
            bounds.check_option(flag, getattr(args, dest))
        with replacing_nothing(force=getattr(args, "force", False)):
            return args.func(args, out, err)
    except DawnbenchError as e:
        err.print(Text.assemble(("error: ", "bold red"), printable(str(e), one_line=True)), highlight=False,
                  soft_wrap=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("interrupted", style="magenta")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
