"""The student's commands: `check` (the public tests, their pytest plugin and reporter) and
`submit`."""
