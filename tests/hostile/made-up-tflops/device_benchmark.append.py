

def matmul_tflops(n, device, dtype=torch.float32, repeats=10):  # noqa: F811
    """A figure that looks measured."""
    return 0.02
