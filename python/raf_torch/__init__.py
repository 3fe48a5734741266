"""raf_torch: exports a PyTorch nn.Module (traced with torch.fx) as a .raf
function and its weights as safetensors, so that raf-opt builds its
training step and raf-run trains it; docs/PyTorch.md describes it.

    import raf_torch
    raf_torch.export(model, (x,), "out/resnet", loss=nn.CrossEntropyLoss())
    # out/resnet.raf, out/resnet.safetensors
    raf_torch.load_checkpoint(model, "trained.safetensors")
"""
from .export import ExportError, UnsupportedError, export, load_checkpoint

__all__ = ["export", "load_checkpoint", "ExportError", "UnsupportedError"]
