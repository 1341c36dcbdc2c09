"""The one exception the model raises when a kernel breaks a rule of the NKI API or of the hardware."""


class NkiModelError(Exception):
    """A kernel did something the NKI API or the NeuronCore forbids.

    `call` names the API call (e.g. "nisa.nc_matmul"), `rule` says which rule was broken. The model never
    computes silently past a violation: it raises this instead.
    """

    def __init__(self, call, rule):
        self.call = call
        self.rule = rule
        super().__init__(f"{call}: {rule}")


def check(cond, call, rule):
    """Raises NkiModelError(call, rule) when `cond` is false."""
    if not cond:
        raise NkiModelError(call, rule)
