"""Widget panels, one module per chapter. Each panel's callback is a plain function pytest can drive."""
