"""`batch`: grade every submission under a folder in parallel, resumably, into a gradebook.

The coordinator (this process) runs no tests and imports torch only to record a crashed
worker's submission: it finds the submissions, decides which still need grading, hands
them to worker processes, writes each `report.json` as it arrives, and builds the gradebook
and the staff summary from the reports on disk. Each worker imports torch once and keeps
one pytest loop and one sandbox fork server warm for every submission it grades, so a
submission costs its tests, not a Python start. A worker that dies costs the submission it
held (its row says "grader error") and is replaced; the other submissions go on.

`--executor ray` runs the same per-submission work as Ray tasks on a Ray cluster.

`run.run_batch` is the command. It finds the submissions (`discovery`, with the names in
Gradescope's export from `metadata`), keeps the reports that still stand (`resume`), grades
the rest (`grader.workers`: the worker process and the executors), and writes the gradebooks
(`gradebook`) and the staff summary (`stats`, `summary`, `pages`) from typed reports
(`grader.results.report.Report`), with the class's code similarity (`similarity`, over the
tokens, fingerprints and pair index of `fingerprints`).
"""
