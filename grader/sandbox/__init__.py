"""`sandbox`: run course probes against student code in isolated processes, and read the results.

- `client`: the trusted side: the `Sandbox` (start the server, hand it jobs, enforce the
  wall time from outside, sweep what is left);
- `zygote`: the zygote process, started as a fresh interpreter or forked from a worker, and
  the reader of the JSON lines it and its servers send back;
- `job_files`: what jobs can read (each part module's files, probe copies), written once
  per submission and readable by the sandbox's group alone;
- `settings`: what a sandbox is asked for, and the names of its protections for notices;
- `server`: the student side, a script run with `python -I` that imports only the standard
  library and torch: the zygote, each submission's fork server, and the student process's
  isolation (namespaces, mounts, limits, a uid of its own);
- `confine`: Landlock and seccomp for the student process (loaded by path by the server);
- `heap`: a process's private memory collapsed into 2 MiB pages, so that it forks cheaply
  (loaded by path by the server; a grading worker uses it too);
- `protocol`: the messages between the two sides (`TypedDict`s) and the constants both read
  (loaded by path by the server too);
- `identity`: the sandbox's own uid, claimed under a lock, and the sweep of its processes
  and files;
- `wire`: decoding a result (JSON and raw tensor bytes, never an unpickler);
- `feedback`: why a job produced no result, in sentences for the student.

This module imports nothing: the server must stay loadable without the client.
docs/security.md describes the whole model.
"""
