"""Writing an assignment: `new` (the scaffold), `validate` (with its lying students) and
`build` (the Gradescope zip and the students' kit)."""
