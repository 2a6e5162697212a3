"""Running the user's code: files and `module:attr` references (`loading`), entry-point plugins
(`plugins`), and code run where it can be abandoned (`abandon`)."""
