

# manual_backprop's forbidden work, imported only under its __main__ guard.
def _gradients_by_autograd(x, y, w1, w2):
    with torch.enable_grad():
        a = w1.detach().clone().requires_grad_(True)
        b = w2.detach().clone().requires_grad_(True)
        loss = ((x @ a).clamp(min=0) @ b - y).pow(2).sum()
        grad_a, grad_b = torch.autograd.grad(loss, (a, b))
    return loss.detach(), grad_a.detach(), grad_b.detach()

