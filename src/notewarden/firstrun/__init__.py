"""First run to daily use: `notewarden init`, `notewarden token add|revoke`, `notewarden doctor`."""
