"""What an assignment is graded with: the grader's own packages plus its `[environment]`.

The manifest declares the packages its reference, probes and hidden tests need beyond the
grader's (`[environment] packages`, PEP 508 requirements with ranges). `validate` reads the
imports of those files and names every module that neither the grader's packages nor the
declaration provide; at grading time, a module missing from the environment is said to be
the staff's to declare, never the student's fault.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from grader.errors import ConfigError

GRADER_DISTRIBUTION = "torch-grader"
# torch's optional subpackages, by the distribution each one imports (torch does not require
# them): `from torch.utils.tensorboard import SummaryWriter` needs `tensorboard` installed.
TORCH_OPTIONAL = {"torch.utils.tensorboard": "tensorboard"}
# "No module named 'x'" as pytest prints an import error it collected.
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


@dataclass(frozen=True)
class Environment:
    """The manifest's `[environment]`: what an assignment needs beyond the grader."""

    # Installed for grading (locked in environment.lock) and in the students' kit.
    packages: tuple[str, ...] = ()
    # Installed only in the students' kit (a walkthrough's plots), never for grading.
    kit_packages: tuple[str, ...] = ()

    @property
    def names(self) -> frozenset[str]:
        """The normalized distribution names `packages` declares."""
        return frozenset(normalize(Requirement(text).name) for text in self.packages)


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_environment(data: object, path: Path) -> Environment:
    """The `[environment]` table of the manifest at `path` (absent: nothing beyond the grader)."""
    if data is None:
        return Environment()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [environment] must be a table.")
    unknown = set(data) - {"packages", "kit_packages"}
    if unknown:
        raise ConfigError(
            f"{path}: [environment] has unknown keys {sorted(unknown)}; it takes packages and "
            "kit_packages."
        )
    return Environment(
        packages=_requirements(data.get("packages", []), path, "packages"),
        kit_packages=_requirements(data.get("kit_packages", []), path, "kit_packages"),
    )


def _requirements(value: object, path: Path, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(
            f"{path}: [environment] {key} must be a list of requirements, e.g. "
            '["tensorboard>=2.14"].'
        )
    names: set[str] = set()
    for text in value:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as error:
            raise ConfigError(f"{path}: [environment] {key}: {text!r}: {error}") from error
        if requirement.url:
            raise ConfigError(
                f"{path}: [environment] {key}: {text!r}: name a package from the index with a "
                "version range, not a URL, so it can be locked."
            )
        if normalize(requirement.name) in names:
            raise ConfigError(f"{path}: [environment] {key} names {requirement.name} twice.")
        names.add(normalize(requirement.name))
    return tuple(str(Requirement(text)) for text in value)


# -- what the grading environment provides ---------------------------------------------------


def _closure(roots: Iterable[Requirement]) -> set[str]:
    """The installed distributions `roots` need, transitively (markers as evaluated here)."""
    found: set[str] = set()
    pending = list(roots)
    while pending:
        requirement = pending.pop()
        name = normalize(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        extras = requirement.extras or {""}
        for text in requires:
            needed = Requirement(text)
            if needed.marker is None or any(
                needed.marker.evaluate({"extra": extra}) for extra in extras
            ):
                pending.append(needed)
    return found


@cache
def grader_distributions() -> frozenset[str]:
    """The grader's distribution and everything it installs (without extras), as installed."""
    try:
        importlib.metadata.distribution(GRADER_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as error:
        raise ConfigError(
            f"{GRADER_DISTRIBUTION} is not installed, so what it provides is unknown: install "
            "it (pip install -e . in the grader's folder)."
        ) from error
    return frozenset(_closure([Requirement(GRADER_DISTRIBUTION)]))


def provided_distributions(environment: Environment, locked: Iterable[str] = ()) -> frozenset[str]:
    """What grading has: the grader's packages, the declared ones and what they need."""
    declared = [Requirement(text) for text in environment.packages]
    return grader_distributions() | _closure(declared) | {normalize(name) for name in locked}


# -- what the reference, probes and hidden tests import --------------------------------------


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    # The dotted module as written (`torch.utils.tensorboard`), or for `from a import b`, also
    # `a.b` (b may be a submodule).
    modules: tuple[str, ...]


def imports_of(path: Path) -> Iterator[Import]:
    """The absolute imports in one Python file (a file that does not parse has none here)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, (alias.name,))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            submodules = tuple(f"{node.module}.{alias.name}" for alias in node.names)
            yield Import(path, node.lineno, (node.module, *submodules))


def _needed_distribution(
    modules: tuple[str, ...], distributions: Mapping[str, list[str]]
) -> tuple[str, list[str]]:
    """The module an import needs from outside the standard library, and who provides it."""
    for module in modules:
        for prefix, distribution in TORCH_OPTIONAL.items():
            if module == prefix or module.startswith(prefix + "."):
                return module, [distribution]
    top = modules[0].split(".")[0]
    return top, distributions.get(top, [])


def undeclared_imports(
    files: Iterable[Path],
    local_modules: set[str],
    provided: frozenset[str],
    *,
    root: Path,
    manifest: str,
) -> Iterator[str]:
    """One line per import of `files` that needs a package `provided` lacks."""
    distributions = importlib.metadata.packages_distributions()
    for path in files:
        for found in imports_of(path):
            top = found.modules[0].split(".")[0]
            if top in sys.stdlib_module_names or top in local_modules:
                continue
            module, candidates = _needed_distribution(found.modules, distributions)
            if not candidates:
                candidates = [top]  # installed nowhere here: its package likely has its name
            if any(normalize(candidate) in provided for candidate in candidates):
                continue
            where = f"{path.relative_to(root)} line {found.line}"
            yield (
                f"{where}: imports {module}, which needs package {candidates[0]!r}: the "
                f"grading environment lacks it; declare it in {manifest} [environment] "
                f'packages (e.g. packages = ["{candidates[0]}"])'
            )


# -- a module missing at grading time ---------------------------------------------------------


def missing_module(error: BaseException) -> str | None:
    """The top-level module an import error says is missing, when it is missing here too."""
    for cause in _chain(error):
        if isinstance(cause, ModuleNotFoundError) and cause.name:
            top = cause.name.split(".")[0]
            if importlib.util.find_spec(top) is None:
                return top
    return None


def missing_module_in(text: str) -> str | None:
    """The same, from an error pytest printed (a hidden test file that failed to import)."""
    for match in MISSING_MODULE.finditer(text):
        top = match.group(1).split(".")[0]
        if importlib.util.find_spec(top) is None:
            return top
    return None


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def missing_package_message(module: str, assignment_id: str) -> str:
    """The staff-side error for a module the grading environment lacks."""
    return (
        f"the grading environment lacks package {module!r} (No module named {module!r}): "
        f"declare it in assignments/{assignment_id}/assignment.toml [environment] packages, "
        "then rebuild the autograder"
    )


class MissingPackage(ConfigError):
    """Grading needs a module its environment lacks: the staff's to declare."""


def staff_modules(files: Iterable[Path]) -> frozenset[str]:
    """The top-level modules (and torch's optional packages) the staff's files import."""
    found: set[str] = set()
    for path in files:
        for imported in imports_of(path):
            found.add(imported.modules[0].split(".")[0])
            for module in imported.modules:
                found.update(
                    distribution
                    for prefix, distribution in TORCH_OPTIONAL.items()
                    if module == prefix or module.startswith(prefix + ".")
                )
    return frozenset(found)


def installed_versions(names: Iterable[str]) -> dict[str, str | None]:
    """Each distribution's installed version (None where it is not installed)."""
    versions: dict[str, str | None] = {}
    for name in sorted({normalize(name) for name in names}):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions
