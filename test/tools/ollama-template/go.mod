module ftp/ollama-template

go 1.19
