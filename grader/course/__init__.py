"""A course and its assignments: the course root, the manifest, each assignment's declared
environment and its lock, and the course's grading policies."""
