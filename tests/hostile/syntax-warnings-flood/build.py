from pathlib import Path

# `1is 1` is valid Python (1 is 1), but the compiler warns for each `1is` ("invalid decimal
# literal"), once per occurrence: 200 a line, 400 lines, 80,000 warnings (over 5 MB of text)
# each time the file is compiled. The student's own compiles (one a test) warn into its
# captured, capped output; the grader's must not warn into its logs.
LINE = "_ = " + "1is " * 200 + "1\n"


def build(folder: Path) -> Path:
    path = folder / "two_layer_net.py"
    path.write_text(path.read_text() + LINE * 400)
    return folder
