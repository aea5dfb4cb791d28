package main

func runNode(args []string) error      { return nil }

func runPublish(args []string) error   { return nil }
func runSubscribe(args []string) error { return nil }
