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
