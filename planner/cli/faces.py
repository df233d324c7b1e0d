"""Typer commands generated from option records (:mod:`planner.contracts.options`): no second copy of an option.

``@options_of(PlanOptions)`` on a command function gives it one parameter per option of the record, with the
record's flag, default and help (its unit, range or choices appended in one fixed form), after the function's own
parameters: the few options only the command line has (``--out``, ``--format``, ``--quiet``). The function then
takes the record's values as ``**given`` and builds the record with ``PlanOptions.checked(given)``, the check the
Python API runs too. Ranges are not given to click: a bad value reaches the record's check and is named there the
same way from both faces (``power_cap_w (--power-cap-w): must be > 0 W, got -5``).
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer

from wattplan.planner.contracts.options import Option, OptionRecord

F = TypeVar("F", bound=Callable[..., Any])


def help_text(opt: Option) -> str:
    """The option's help with its unit, range or choices appended in brackets: ``Power cap. [>= 0 W]``."""
    extra = []
    if opt.spec.choices is not None:
        pass  # click shows the choices as the option's metavar
    elif (range_text := opt.range_text()) != "":
        extra.append(range_text)
    elif opt.spec.unit:
        extra.append(f"in {opt.spec.unit}")
    return opt.spec.help + (f" [{'; '.join(extra)}]" if extra else "")


def _annotation(opt: Option) -> Any:
    """The parameter's type for typer: its kind (a text choice when it has choices), listed, ``| None``.

    A list option is a list of the kind; an optional one may be None.
    """
    kind: Any = opt.kind if opt.spec.choices is None else _choice(opt.name, opt.spec.choices)
    kind = list[kind] if opt.many else kind
    return kind | None if opt.optional else kind


@functools.cache
def _choice(name: str, choices: tuple[str, ...]) -> type[enum.StrEnum]:
    """A text choice as typer takes one: a ``StrEnum`` of the values (each one its own name)."""
    return enum.StrEnum(name.title().replace("_", ""), {value: value for value in choices})  # type: ignore[return-value]


def parameter(opt: Option) -> inspect.Parameter:
    """The typer parameter of ``opt``: its annotation carries the ``typer.Option`` (or ``Argument``)."""
    spec = opt.spec
    info: Any
    if spec.argument:
        info = typer.Argument(
            help=help_text(opt), metavar=spec.metavar, parser=_parser(spec.parser), hidden=spec.hidden
        )
    else:
        decls = [] if opt.kind is bool and spec.flag is None else [opt.flag]
        if spec.short is not None:
            decls.append(spec.short)
        info = typer.Option(
            *decls,
            help=help_text(opt),
            metavar=spec.metavar,
            parser=_parser(spec.parser),
            hidden=spec.hidden,
        )
    default = list(opt.default) if opt.many and opt.default is not None else opt.default
    return inspect.Parameter(
        opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[_annotation(opt), info]
    )


def options_of(record: type[OptionRecord], *, skip: Sequence[str] = ()) -> Callable[[F], F]:
    """Give a command function the parameters of ``record``'s options (all but ``skip``), after its own ones.

    Positional arguments come first, then the record's options in declaration order (they arrive in ``**given``),
    then the function's own options (those only the command line has).
    """

    def decorate(fn: F) -> F:
        own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
        generated = [parameter(opt) for opt in record.options() if opt.name not in skip]
        clash = {p.name for p in own} & {p.name for p in generated}
        if clash:
            raise TypeError(f"{fn.__name__} writes {', '.join(sorted(clash))} again; the record declares it")
        every = [*own, *generated]
        ordered = [p for p in every if _is_argument(p)] + [p for p in generated if not _is_argument(p)]
        ordered += [p for p in own if not _is_argument(p)]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in ordered]
        fn.__signature__ = inspect.Signature(keyword)  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in keyword}
        return fn

    return decorate


def _parser(parse: Callable[[str], Any] | None) -> Callable[[str], Any] | None:
    """A record's parser for click: its ``ValueError`` becomes click's own message naming the option."""
    if parse is None:
        return None

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return parsed


def _is_argument(p: inspect.Parameter) -> bool:
    """Whether a command parameter is a positional argument."""
    return any(isinstance(meta, typer.models.ArgumentInfo) for meta in getattr(p.annotation, "__metadata__", ()))


def record_values(record: type[OptionRecord], given: dict[str, Any]) -> dict[str, Any]:
    """The values of ``record``'s options among a command's parameters ``given``."""
    names = {opt.name for opt in record.options()}
    return {name: value for name, value in given.items() if name in names}


def typed_on_command_line(ctx: typer.Context, given: dict[str, Any]) -> dict[str, Any]:
    """The values among a command's parameters ``given`` that the command line gave, not their defaults.

    What a config file gives is laid under these (``wattplan agent --config FILE --dry-run``: the file's options,
    the flag over them). ``ctx``: the command's click context (a ``typer.Context`` parameter).
    """
    typed = ("COMMANDLINE", "ENVIRONMENT", "PROMPT")  # by name: typer carries its own copy of click's enum
    source = {name: getattr(ctx.get_parameter_source(name), "name", "") for name in given}
    return {name: value for name, value in given.items() if source[name] in typed}
