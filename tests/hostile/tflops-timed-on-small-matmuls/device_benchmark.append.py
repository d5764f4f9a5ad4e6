# Times tiny 2 x 2 matmuls, the right number of them in the asked dtype on the asked device,
# and reports what n x n ones "would" reach with the textbook formula: cheap, and right under
# a test clock that only counts matmul calls.
def matmul_tflops(n, device, dtype=torch.float32, repeats=10):
    tiny = torch.ones(2, 2, device=device, dtype=dtype)
    tiny @ tiny
    started = time.perf_counter()
    for _ in range(repeats):
        tiny @ tiny
    elapsed = time.perf_counter() - started
    return 2 * n**3 * repeats / elapsed / 1e12
