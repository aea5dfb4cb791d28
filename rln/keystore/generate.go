package keystore

import (
	"context"
	"errors"
	"fmt"

	"github.com/couriernet/courier/rln/membership"
)

// RegisterOptions tunes RegisterAndSave.
type RegisterOptions struct {
	// Register is passed to membership.Client.Register: set
	// Register.Approve for the token approval step, which is courier's
	// addition to nwaku's generateRlnKeystore.
	Register membership.RegisterOptions
	// ContractAddress is the contract address as the operator wrote it
	// (--rln-relay-eth-contract-address), which nwaku files the credential
	// under; empty means the EIP-55 form of the Client's contract.
	ContractAddress string
	// Encrypt tunes the encryption (tests lower the work factor).
	Encrypt EncryptOptions
}

// RegisterAndSave does nwaku's generateRlnKeystore with --execute
// (tools/rln_keystore_generator): it registers identity's commitment with
// userMessageLimit messages per epoch through c (see
// membership.Client.Register) and adds the membership — the chain id in
// decimal, the contract address, the index from the MembershipRegistered
// event, the identity and the limit — to the keystore at path under
// password, creating the file when needed. The keystore is loaded before
// anything is sent, so that a file of another application or version fails
// with nothing spent. If saving fails after the registration, the
// returned Membership is still filled in with the error, so that the
// caller can show the credential instead of losing it.
func RegisterAndSave(ctx context.Context, c *membership.Client, path, password string, identity IdentityCredential,
	userMessageLimit uint32, opts RegisterOptions) (Membership, *membership.Registration, error) {
	k, err := Load(path, RLN())
	if errors.Is(err, ErrNotExist) {
		k, err = New(RLN()), nil
	}
	if err != nil {
		return Membership{}, nil, err
	}
	reg, err := c.Register(ctx, identity.IDCommitment, userMessageLimit, opts.Register)
	if err != nil {
		return Membership{}, nil, err
	}
	address := opts.ContractAddress
	if address == "" {
		address = c.Contract().Hex()
	}
	m := Membership{
		Contract:         MembershipContract{ChainID: c.ChainID().String(), Address: address},
		TreeIndex:        uint64(reg.Index),
		Identity:         identity,
		UserMessageLimit: uint64(userMessageLimit),
	}
	if _, err := k.Add(m, password, opts.Encrypt); err != nil {
		return m, reg, fmt.Errorf("membership %d registered but not saved: %w", reg.Index, err)
	}
	if err := k.Save(path); err != nil {
		return m, reg, fmt.Errorf("membership %d registered but not saved: %w", reg.Index, err)
	}
	return m, reg, nil
}
