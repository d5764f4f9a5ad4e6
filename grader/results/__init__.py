"""What grading produces: the results model, report.json, Gradescope's results.json, the
terminal tables, and output files written atomically."""
