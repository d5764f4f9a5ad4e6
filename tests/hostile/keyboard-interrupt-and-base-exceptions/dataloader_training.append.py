def make_loader(x, y, batch_size=8, shuffle=False):
    raise KeyboardInterrupt


def train_with_loader(model, loader, optimizer, epochs=10):
    raise GeneratorExit


class Hostile(BaseException):
    def __str__(self):
        raise Hostile()

    def __repr__(self):
        raise Hostile()


def evaluate(model, loader):
    raise Hostile()
