"""Widget panels, one module per chapter. Each panel's callback is a plain function pytest drives."""
from __future__ import annotations


def run_panel(controls: dict, show, label: str = "Run"):
    """Controls, a Run button and an output area; a click calls show(**values) into the area.

    Nothing runs at display time: writing into an Output widget then would need saved widget
    state. A ValueError from `show` (a value out of range) is printed as a message.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    button = widgets.Button(description=label)
    out = widgets.Output()

    def on_click(_):
        with out:
            out.clear_output()
            try:
                show(**{name: control.value for name, control in controls.items()})
            except ValueError as e:
                print(f"Cannot run with these values: {e}")
            plt.show()

    button.on_click(on_click)
    return widgets.VBox([widgets.HBox([*controls.values(), button]), out])
