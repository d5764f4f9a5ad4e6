# Every forbidden name is an attribute read by a match class pattern: `case object(x=v)` does
# getattr(subject, "x"), with no dot, string or Name in the source. The dispatch modes the
# run-time check records through are switched off the same way, so only the source rule is left.
match torch:
    case object(
        autograd=object(grad=_grad_of),
        enable_grad=_grad_on,
        utils=object(_python_dispatch=object(_disable_current_modes=_unwatched)),
    ):
        pass


def forward_backward(x, y, w1, w2):
    with _unwatched(), _grad_on():
        first = w1.detach().clone()
        second = w2.detach().clone()
        match first, second:
            case (object(requires_grad_=_track_first), object(requires_grad_=_track_second)):
                _track_first()
                _track_second()
        loss = ((x @ first).clamp(min=0) @ second - y).pow(2).sum()
        grad_first, grad_second = _grad_of(loss, (first, second))
    return loss.detach(), grad_first, grad_second
