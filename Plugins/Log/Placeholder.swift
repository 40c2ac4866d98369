enum LogPlaceholder {}
