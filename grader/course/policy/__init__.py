"""Course policies: late penalties, limits on graded submissions, which score a grade keeps.

`config` reads them from the manifest's [policy] table, `metadata` reads what one submission's
Gradescope metadata says (hostile data, read with bounds), `apply` decides, as pure functions,
what a result becomes under them, and `results_json` writes that into Gradescope's
results.json.
"""
