"""Pages of the checks service: HTML plus their script and style as separate files (the CSP allows
no inline script or style)."""
