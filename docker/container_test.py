"""Grade real submissions inside the Gradescope image, run the way Gradescope runs it.

`make docker-test ASSIGNMENT=A` runs this (`-a A`). A is an assignment of the course the
grader's commands find: `GRADER_COURSE`, else the course at or above the working folder,
else this checkout's. From a fresh clone on a machine with Docker's packages it:

1. starts a Docker engine if none answers (`dockerd` in the background, as root);
2. picks the base image: Gradescope's `gradescope/autograder-base:ubuntu-22.04` when it can
   be pulled, else a stand-in: Debian bookworm made with `debootstrap` and loaded with
   `docker import` (`--base gradescope|standin|auto`, default auto);
3. builds the autograder zip (`python -m grader build autograder -a A`) and the image
   `torch-grader-autograder:A` from it with the project's own docker/Dockerfile and the
   zip's setup.sh, which installs A's environment.lock too; pip gets this machine's CA
   bundle and finds the pinned torch wheel in its find-links folder (builds may use the
   host network; runs never do);
4. grades, each in a fresh container with `--network none`, Gradescope's default limits
   (`--cpus=0.5 --memory=768m`) and no extra capabilities: the reference (full marks), the
   stubs (0) and, for this checkout's assignments, every case of tests/hostile/ that
   attacks A (its expected part scores), plus, for pytorch_basics, two container-only
   attacks: the solutions folder made world-readable before grading must still be
   unreadable to student code, and a TCP connect must fail;
5. prints one line per case and what `environment.sandbox` reported, and exits 1 if any
   score differs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.course.manifest import Assignment, load_assignment  # noqa: E402
from grader.course.root import find_course_root  # noqa: E402
from tests import test_hostile  # noqa: E402  (the hostile suite's own case builder)
from tests.deep_folders import remove_tree  # noqa: E402

BUILD = ROOT / "build" / "docker"
GRADESCOPE_BASE = "gradescope/autograder-base:ubuntu-22.04"
STANDIN_BASE = "torch-grader-standin:bookworm"
DEBIAN_MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
CA_BUNDLE = Path(os.environ.get("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt"))
WHEELS = Path(os.environ.get("PIP_FIND_LINKS", "/opt/wheels").split()[0])
CONTAINER_ONLY = ROOT / "docker" / "container_attacks"


@dataclass
class Case:
    name: str
    submission: Path
    expected: dict[str, float]
    before: str = ""  # a shell command run as root in the container before grading


def sh(*command: str | Path, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], check=check, text=True, **kwargs)


def ensure_engine() -> None:
    if sh("docker", "info", check=False, capture_output=True).returncode == 0:
        return
    if shutil.which("dockerd") is None:
        sys.exit("no Docker engine: apt-get install docker.io (as root), then run this again.")
    BUILD.mkdir(parents=True, exist_ok=True)
    log = (BUILD / "dockerd.log").open("ab")
    subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True)
    for _ in range(60):
        if sh("docker", "info", check=False, capture_output=True).returncode == 0:
            return
        time.sleep(1)
    sys.exit(f"dockerd did not answer within 60 s; see {BUILD / 'dockerd.log'}")


def image_tag(assignment: str) -> str:
    """The tag of the image `make docker ASSIGNMENT=assignment` builds."""
    return f"torch-grader-autograder:{assignment}"


def _have_image(tag: str) -> bool:
    return sh("docker", "image", "inspect", tag, check=False, capture_output=True).returncode == 0


def base_image(choice: str) -> str:
    if choice in ("auto", "gradescope"):
        if _have_image(GRADESCOPE_BASE):
            return GRADESCOPE_BASE
        pulled = sh("docker", "pull", GRADESCOPE_BASE, check=False, capture_output=True)
        if pulled.returncode == 0:
            return GRADESCOPE_BASE
        if choice == "gradescope":
            sys.exit(f"cannot pull {GRADESCOPE_BASE}: {pulled.stderr.strip()}")
        print(f"{GRADESCOPE_BASE} cannot be pulled here; using the Debian stand-in.")
    if not _have_image(STANDIN_BASE):
        rootfs = BUILD / "rootfs"
        if not (rootfs / "usr" / "bin" / "python3").exists():
            if shutil.which("debootstrap") is None:
                sys.exit("the stand-in needs debootstrap: apt-get install debootstrap.")
            shutil.rmtree(rootfs, ignore_errors=True)
            print("debootstrap: Debian bookworm with python3 (a few minutes, once)")
            sh(
                "debootstrap",
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                "bookworm",
                rootfs,
                DEBIAN_MIRROR,
                stdout=subprocess.DEVNULL,
            )
        (rootfs / "autograder").mkdir(exist_ok=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        sh("docker", "import", "-", STANDIN_BASE, stdin=tar.stdout, stdout=subprocess.DEVNULL)
        tar.wait()
    return STANDIN_BASE


def unpack_autograder(assignment: str, context: Path) -> None:
    """The autograder zip of `assignment`, unpacked into `context` (as Gradescope does)."""
    shutil.rmtree(context, ignore_errors=True)
    archive = BUILD / "autograder.zip"
    sh(sys.executable, "-m", "grader", "build", "autograder", "-a", assignment, "-o", archive)
    with zipfile.ZipFile(archive) as bundle:
        bundle.extractall(context)


def checkout_source(assignment: str) -> Path:
    """This checkout's autograder, unpacked to mount as the image's /autograder/source.

    The image's venv has the grader installed editable from there, so a container then runs
    the grader as it is now, without a rebuild. The solutions are root-only, as setup.sh
    leaves them.
    """
    source = BUILD / "source"
    unpack_autograder(assignment, source)
    for path in (source / "solutions").rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    (source / "solutions").chmod(0o700)
    return source


def stale_installs(tag: str, assignment: str, source: Path) -> list[str]:
    """The files setup.sh installs from that differ between image `tag` and `source`.

    With --no-build the image's installed packages grade this checkout's autograder: a
    changed constraints.txt or environment.lock means the image installed other packages.
    """
    names = ["constraints.txt", f"assignments/{assignment}/environment.lock"]
    listed = sh(
        "docker", "run", "--rm", "--network", "none", tag, "bash", "-c",
        'cd /autograder/source && sha256sum -- "$@" 2>/dev/null; true', "sha256sum", *names,
        capture_output=True,
    ).stdout  # fmt: skip
    in_image = {name: digest for digest, name in (line.split() for line in listed.splitlines())}
    here = {
        name: hashlib.sha256((source / name).read_bytes()).hexdigest()
        for name in names
        if (source / name).is_file()
    }
    return sorted(name for name in names if in_image.get(name) != here.get(name))


def source_for_built_image(assignment: str) -> Path:
    """This checkout's autograder of `assignment`, to mount in the image built for it.

    Exits with what to run when there is no such image, or when it installed its packages
    from other pins than this checkout's.
    """
    tag = image_tag(assignment)
    if not _have_image(tag):
        sys.exit(f"no image {tag}: build it with `make docker ASSIGNMENT={assignment}`.")
    source = checkout_source(assignment)
    stale = stale_installs(tag, assignment, source)
    if stale:
        sys.exit(
            f"{tag} was built from another {' and '.join(stale)}, so it installed other "
            f"packages: rebuild it with `make docker ASSIGNMENT={assignment}`."
        )
    return source


def build_image(assignment: str, base: str, tag: str) -> None:
    context = BUILD / "context"
    unpack_autograder(assignment, context)
    build_only = context / ".build-only"
    (build_only / "wheels").mkdir(parents=True)
    build_args = ["--build-arg", f"BASE_IMAGE={base}"]
    wheels = sorted(WHEELS.glob("torch-*.whl")) if WHEELS.is_dir() else []
    for wheel in wheels:
        os.link(wheel, build_only / "wheels" / wheel.name)
    if wheels:
        build_args += [
            "--build-arg",
            "GRADER_SETUP_PIP_ARGS=--find-links /autograder/source/.build-only/wheels",
            "--build-arg",
            "GRADER_SETUP_TORCH_INDEX=",
        ]
    if CA_BUNDLE.is_file():
        shutil.copy(CA_BUNDLE, build_only / "ca-certificates.crt")
        build_args += [
            "--build-arg",
            "BUILD_PIP_CERT=/autograder/source/.build-only/ca-certificates.crt",
        ]
    sh(
        "docker",
        "build",
        "--network",
        "host",
        *build_args,
        "-f",
        ROOT / "docker" / "Dockerfile",
        "-t",
        tag,
        context,
    )


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder removed deepest first: one case nests 1,100 folders, past the
    recursion limit of shutil.rmtree (and so of TemporaryDirectory)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        remove_tree(folder)


def grade_in_container(
    tag: str, case: Case, limits: list[str], source: Path | None
) -> tuple[dict[str, Any], float]:
    with scratch_folder("container-test-") as run:
        (run / "submission").mkdir()
        (run / "results").mkdir()
        if case.submission.is_dir():
            # cp -a: some attacks hold FIFOs and links, which shutil.copytree refuses.
            sh("cp", "-a", f"{case.submission}/.", run / "submission")
        else:
            shutil.copy(case.submission, run / "submission" / case.submission.name)
        command = "/autograder/run_autograder"
        if case.before:
            command = f"{case.before} && {command}"
        started = time.monotonic()
        sh(
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            *limits,
            "-v",
            f"{run / 'submission'}:/autograder/submission",
            "-v",
            f"{run / 'results'}:/autograder/results",
            *(["-v", f"{source}:/autograder/source"] if source else []),
            tag,
            "bash",
            "-c",
            command,
            capture_output=True,
            check=False,
        )
        seconds = time.monotonic() - started
        results_file = run / "results" / "results.json"
        if not results_file.exists():
            return {}, seconds
        return dict(json.loads(results_file.read_text(encoding="utf-8"))), seconds


def part_scores(results: dict[str, Any]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in results.get("tests", []):
        for part in test.get("tags", []):
            scores[part] = scores.get(part, 0.0) + float(test.get("score", 0.0))
    return scores


def course_assignment(assignment: str) -> Assignment:
    """`assignment` in the course the grader's commands find (`GRADER_COURSE`, else the
    course at or above the working folder, else this checkout's), as `build` packs it."""
    return load_assignment(assignment, root=find_course_root() / "assignments")


def cases(assignment: str, work: Path, only: set[str]) -> list[Case]:
    manifest = course_assignment(assignment)
    full = {part.id: part.points for part in manifest.parts}
    found = [
        Case("reference", manifest.solutions_dir, full),
        Case("stubs", manifest.directory, dict.fromkeys(full, 0.0)),
    ]
    if manifest.directory.parent.parent.resolve() != ROOT:
        # Another course's assignment: the attacks below are written against this one's.
        return [case for case in found if not only or case.name in only]
    replacements = {
        "__HOSTILE_PORT__": "9",
        "__HOSTILE_CANARY__": "/tmp/container-test-canary",
        "__HOSTILE_OUTPUTS__": "/autograder/results",
    }
    attacks = [*test_hostile.load_cases(), *_container_attacks()]
    for attack in attacks:
        if attack.assignment != assignment or (only and attack.name not in only):
            continue
        if attack.checks.get("known_hole"):
            continue
        folder = work / attack.name
        folder.mkdir()
        submission = test_hostile.build_submission(attack, folder, replacements)
        before = str(attack.expected.get("container", {}).get("before", ""))
        found.append(Case(attack.name, submission, attack.scores, before))
    return [case for case in found if not only or case.name in only]


def _container_attacks() -> list[test_hostile.Case]:
    if not CONTAINER_ONLY.is_dir():
        return []
    loaded = []
    for folder in sorted(p for p in CONTAINER_ONLY.iterdir() if p.is_dir()):
        expected = tomllib.loads((folder / "expected.toml").read_text("utf-8"))
        loaded.append(test_hostile.Case(folder.name, folder, expected))
    return loaded


def wrong_parts(case: Case, results: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Part -> (got, expected) for every part of `case` that did not score as expected."""
    got = part_scores(results)
    return {
        part: (got.get(part, 0.0), want)
        for part, want in case.expected.items()
        # results.json rounds each test's score to 6 decimals; a part sums several.
        if abs(got.get(part, 0.0) - want) > 1e-4
    }


def report(case: Case, results: dict[str, Any], seconds: float) -> bool:
    """Print one line for `case`; True when every part scored as expected."""
    wrong = wrong_parts(case, results)
    sandbox = results.get("extra_data", {}).get("environment", {}).get("sandbox", {})
    passed = bool(results) and not wrong
    detail = f"wrong {wrong}" if wrong else ("no results.json" if not results else "")
    score = results.get("score", "-")
    print(f"{'ok  ' if passed else 'FAIL'} {case.name:<40} {score:>6} {seconds:6.1f} s {detail}")
    if case.name == "reference":
        on = sorted(name for name, value in sandbox.items() if value is True)
        print(f"     protections on: {len(on)}: {', '.join(on)}", flush=True)
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-a", "--assignment", default="pytorch_basics")
    parser.add_argument("--base", choices=("auto", "gradescope", "standin"), default="auto")
    parser.add_argument("--cpus", default="0.5")
    parser.add_argument("--memory", default="768m")
    parser.add_argument("--jobs", type=int, default=3, help="containers at a time")
    parser.add_argument("--only", nargs="*", default=[], help="case names (default: all)")
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="reuse the built image, with this checkout's autograder zip mounted as its source",
    )
    parser.add_argument("--build-only", action="store_true", help="build the image, grade nothing")
    args = parser.parse_args(argv)
    tag = image_tag(args.assignment)
    ensure_engine()
    source = None
    if args.no_build:
        source = source_for_built_image(args.assignment)
    else:
        build_image(args.assignment, base_image(args.base), tag)
    if args.build_only:
        return 0
    limits = [f"--cpus={args.cpus}", f"--memory={args.memory}"]
    failures = 0
    started = time.monotonic()
    with scratch_folder("container-cases-") as scratch:
        chosen = cases(args.assignment, scratch, set(args.only))
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            graded = pool.map(lambda case: grade_in_container(tag, case, limits, source), chosen)
            for case, (results, seconds) in zip(chosen, graded, strict=True):
                failures += not report(case, results, seconds)
    print(f"{failures} failed; {time.monotonic() - started:.0f} s of grading")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
