enum ExecPlaceholder {}
