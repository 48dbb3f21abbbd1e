"""The loop the model-export scripts share: export each named model, reporting (not raising)
a model its exporter cannot take, so one failure does not stop the rest."""
import os


def export_each(out, names, export):
    os.makedirs(out, exist_ok=True)
    for name in names:
        try:
            export(name, out)
        except Exception as e:  # noqa: BLE001 - any exporter error is reported the same way
            print(f'{name}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}', flush=True)


def parse_name(name, prefixes, table):
    """A model name PREFIX_ARCH: whether PREFIX is the second of `prefixes` (the dynamo
    exporter's), and ARCH, which must be a key of `table`."""
    arch = name.split('_', 1)[1] if name.startswith(prefixes) else ''
    if arch not in table:
        raise KeyError(f'unknown model {name!r}: names are {" or ".join(prefixes)} and one of {", ".join(table)}')
    return name.startswith(prefixes[1]), arch


def export_torch(model, args, out, name, dynamo):
    """model(*args), an eval-mode torch module, exported without gradients to OUT/NAME.onnx by the
    dynamo exporter or the TorchScript one (opset 17), its inputs saved as OUT/NAME.input_K.npy."""
    import numpy as np
    import torch
    path = os.path.join(out, name + '.onnx')
    in_names = [f'input_{i}' for i in range(len(args))]
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(model, args, path, dynamo=True, input_names=in_names, external_data=False)
        else:
            torch.onnx.export(model, args, path, opset_version=17, input_names=in_names, dynamo=False)
    for i, a in enumerate(args):
        np.save(os.path.join(out, f'{name}.input_{i}.npy'), a.numpy())
    print(f'{path} {os.path.getsize(path) / 1e6:.2f} MB', flush=True)
