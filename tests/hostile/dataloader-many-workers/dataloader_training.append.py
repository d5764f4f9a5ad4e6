def make_loader(x, y, batch_size=8, shuffle=False):
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle, num_workers=1000)


_reference_train_with_loader = train_with_loader
_reference_evaluate = evaluate


def _many_workers(loader):
    return DataLoader(loader.dataset, batch_size=loader.batch_size, num_workers=1000)


def train_with_loader(model, loader, optimizer, epochs=10):
    return _reference_train_with_loader(model, _many_workers(loader), optimizer, epochs)


def evaluate(model, loader):
    return _reference_evaluate(model, _many_workers(loader))
