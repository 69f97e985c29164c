"""The ``swafuzz`` command line: the torch-free parser, the commands, the listings, tool failures and exit codes."""
