TwoLayerNet.forward = lambda self, x: torch.empty(
    x.shape[0], self.linear2.out_features, device="meta"
)
ParallelBlock.forward = lambda self, x: (self.linear1(x) * self.linear2(x)).clamp(min=0).to("cuda")
