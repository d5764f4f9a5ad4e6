"""Grading workers: warm processes that grade one submission at a time for `grade`,
`gradescope` and `batch`.

`protocol.py` states what crosses between a command and its workers; `process.py` is the
worker process (it grades with `grader.grading.grade`); `executors.py` runs workers, as local
processes or as Ray tasks. The commands use this package; nothing in it imports a command.
"""
