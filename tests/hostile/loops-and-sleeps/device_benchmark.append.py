def pick_device():
    while True:
        pass


def peak_tflops(num_sms, units_per_sm, flops_per_unit_per_cycle, clock_ghz):
    while True:
        pass


def matmul_tflops(n, device, dtype=torch.float32, repeats=10):
    while True:
        pass
