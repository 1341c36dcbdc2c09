"""nki.typing: `nt.tensor[shape]` annotations for kernel parameters (NKI 0.3+). The model ignores them."""


class _TensorAnnotation:
    """tensor[128, 512] (or tensor[(128, 512), dtype]) yields an annotation object carrying the key."""

    def __init__(self, key=None):
        self.key = key

    def __getitem__(self, key):
        return _TensorAnnotation(key)

    def __repr__(self):
        return f"nki.typing.tensor[{self.key!r}]"


tensor = _TensorAnnotation()
