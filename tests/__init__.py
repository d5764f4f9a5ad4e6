"""The grader's own tests: a package, so every test imports `tests.support` the same way."""
