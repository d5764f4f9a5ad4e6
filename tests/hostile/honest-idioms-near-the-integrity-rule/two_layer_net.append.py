

OPTIMIZER = "SGD"


def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return getattr(torch.optim, OPTIMIZER)(model.parameters(), lr=lr)


class _Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        for i in range(2):
            setattr(self, f"layer{i}", nn.Linear(3, 3))
        self.__dict__["note"] = "layers by name"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in range(2):
            x = getattr(self, f"layer{i}")(x)
        return x


_Stack()(torch.zeros(1, 3))
