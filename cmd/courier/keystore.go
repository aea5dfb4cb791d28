package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"os/signal"
	"syscall"

	"github.com/ethereum/go-ethereum/common"

	"github.com/couriernet/courier/rln"
	"github.com/couriernet/courier/rln/keystore"
	"github.com/couriernet/courier/rln/membership"
)

const keystoreHelp = `usage: courier generateRlnKeystore [flags]
       wakunode2 generateRlnKeystore [flags]

Makes a new RLN identity credential and, with --execute, registers its
commitment on the membership contract and adds the membership to the
keystore at --rln-relay-cred-path, encrypted with --rln-relay-cred-password,
in nwaku's format, as nwaku v0.38.1's generateRlnKeystore does
(tools/rln_keystore_generator). Without --execute it is a dry run: it
prints the credential and exits without sending anything.

The registration is register(idCommitment, userMessageLimit, []) sent to
--rln-relay-eth-contract-address through --rln-relay-eth-client-address
from the account of --rln-relay-eth-private-key, for
--rln-relay-user-message-limit messages per epoch; the contract takes a
token deposit for that limit from the account (transferFrom), which the
account must have approved. nwaku's register sends no approval (its tests
approve the token beforehand). --rln-relay-approve-deposit is courier's
addition: it first sends approve(contract, deposit) from the same account
when the allowance does not cover the deposit, and waits for it to be
mined. Without it a short allowance fails before any transaction is sent.

The keystore file is created when missing; a keystore that holds other
memberships keeps them. Keep it and its password: the credential's secrets
are in it, and whoever holds them can spend the membership's messages.

Example, on a local test chain (see docs/rln.md):
  courier generateRlnKeystore --execute \
      --rln-relay-eth-client-address=http://127.0.0.1:8545 \
      --rln-relay-eth-contract-address=0x... --rln-relay-eth-private-key=0x... \
      --rln-relay-user-message-limit=10 --rln-relay-approve-deposit \
      --rln-relay-cred-path=./rlnKeystore.json --rln-relay-cred-password=secret

Flags:
`

// keystoreOptions are what generateRlnKeystore's own flags set.
type keystoreOptions struct {
	execute, approve bool
	// userMessageLimit is --rln-relay-user-message-limit, the limit
	// registered (default 1, nwaku's; with The Waku Network's preset 100).
	userMessageLimit uint64
}

// keystoreRows are the node flags generateRlnKeystore takes, nwaku's
// (the options of WakuNodeConf before its command branch,
// tools/confutils/cli_args.nim).
var keystoreRows = []string{"config-file", "log-level", "log-format", "rln-relay-cred-path", "rln-relay-eth-client-address",
	"rln-relay-eth-contract-address", "rln-relay-chain-id", "rln-relay-cred-password", "rln-relay-eth-private-key",
	"rln-relay-user-message-limit", "rln-relay-epoch-sec", "max-msg-size"}

// keystoreFlags is generateRlnKeystore's command line: keystoreRows,
// --execute and courier's --rln-relay-approve-deposit.
var keystoreFlags = func() []flagDef {
	var defs []flagDef
	for _, name := range keystoreRows {
		for _, d := range nodeFlags {
			if d.name == name {
				defs = append(defs, d)
			}
		}
	}
	return append(defs,
		flagDef{name: "execute", kind: kindBool, nwaku: "false", usage: "register on chain and save the keystore (default: a dry run)",
			apply: func(o *nodeOptions, v flagVal) error { o.keystore.execute = v.bool(); return nil }},
		flagDef{name: "rln-relay-approve-deposit", kind: kindBool, courierOnly: true,
			usage: "first approve the contract to take the token deposit when the allowance falls short (courier's addition: nwaku sends no approval)",
			apply: func(o *nodeOptions, v flagVal) error { o.keystore.approve = v.bool(); return nil }})
}()

// runKeystore is `courier generateRlnKeystore`.
func runKeystore(args []string) error {
	p := newFlagSet("generateRlnKeystore", keystoreFlags)
	if err := p.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stderr, keystoreHelp)
			p.fs.SetOutput(os.Stderr)
			p.fs.PrintDefaults()
		}
		return err
	}
	path := p.values["config-file"].val.str()
	if path == "" {
		if _, v, ok := lookupEnv("config-file"); ok {
			path = v
		}
	}
	if err := p.applyEnvAndFile(path); err != nil {
		return err
	}
	o := &nodeOptions{}
	if err := p.resolve(keystoreFlags, o); err != nil {
		return err
	}
	level := new(slog.LevelVar)
	level.Set(o.logLevel)
	log := newLogger(os.Stdout, level, o.logJSON)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return generateKeystore(ctx, o, log)
}

// generateKeystore makes a credential and, with --execute, registers and
// saves it.
func generateKeystore(ctx context.Context, o *nodeOptions, log *slog.Logger) error {
	r, k := o.cfg.RLNRelay, o.keystore
	if k.execute {
		switch {
		case r.CredPath == "" || r.CredPassword == "":
			return &usageError{errors.New("--execute needs --rln-relay-cred-path and --rln-relay-cred-password: the keystore to save the membership to")}
		case r.EthPrivateKey == "":
			return &usageError{errors.New("--execute needs --rln-relay-eth-private-key: the account that sends the registration and pays its deposit")}
		case !common.IsHexAddress(r.EthContractAddress):
			return &usageError{fmt.Errorf("--rln-relay-eth-contract-address %q: want the membership contract's address, 0x and 40 hex digits", r.EthContractAddress)}
		case k.userMessageLimit > 1<<32-1:
			return &usageError{fmt.Errorf("--rln-relay-user-message-limit %d is too large", k.userMessageLimit)}
		}
	}
	id, err := rln.NewIdentityCredential(nil)
	if err != nil {
		return err
	}
	if !k.execute {
		log.Info("credentials", "idTrapdoor", id.Trapdoor.String(), "idNullifier", id.Nullifier.String(),
			"idSecretHash", id.SecretHash.String(), "idCommitment", id.Commitment.String())
		log.Info("not executing, exiting (give --execute to register the credential and save it)")
		return nil
	}
	log.Info("credentials", "idCommitment", id.Commitment.String())
	key, err := membership.ParsePrivateKey(r.EthPrivateKey)
	if err != nil {
		return &usageError{fmt.Errorf("--rln-relay-eth-private-key: %w", err)}
	}
	mc := membership.Config{Endpoints: r.EthClientAddresses, Contract: common.HexToAddress(r.EthContractAddress), PrivateKey: key, Logger: log}
	if r.ChainID != 0 {
		mc.ChainID = new(big.Int).SetUint64(r.ChainID)
	}
	c, err := membership.Dial(ctx, mc)
	if err != nil {
		return fmt.Errorf("failure while initializing the membership contract client: %w", err)
	}
	defer c.Close()
	ident := keystore.IdentityCredential{IDTrapdoor: id.Trapdoor, IDNullifier: id.Nullifier, IDSecretHash: id.SecretHash, IDCommitment: id.Commitment}
	m, reg, err := keystore.RegisterAndSave(ctx, c, r.CredPath, r.CredPassword, ident, uint32(k.userMessageLimit),
		keystore.RegisterOptions{Register: membership.RegisterOptions{Approve: k.approve}, ContractAddress: r.EthContractAddress})
	if reg != nil {
		if reg.ApproveTxHash != (common.Hash{}) {
			log.Info("Deposit approved", "txHash", reg.ApproveTxHash.Hex(), "token", reg.Token.Hex(), "deposit", reg.Deposit)
		}
		log.Info("Transaction hash", "txHash", reg.TxHash.Hex())
		log.Info("Your membership has been registered on-chain.", "chainId", c.ChainID(), "contractAddress", r.EthContractAddress, "membershipIndex", reg.Index)
		log.Info("Your user message limit is", "userMessageLimit", reg.RateLimit)
	}
	if err != nil && reg != nil {
		// Registered but not saved: show the secrets rather than lose them.
		log.Error("failed to persist credentials; keep these to use the membership", "idTrapdoor", id.Trapdoor.String(),
			"idNullifier", id.Nullifier.String(), "idSecretHash", id.SecretHash.String(), "treeIndex", m.TreeIndex)
	}
	if err != nil {
		return err
	}
	log.Info("credentials persisted", "path", r.CredPath, "key", m.Key())
	return nil
}
