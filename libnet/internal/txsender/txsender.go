// Package txsender recovers the sender of a raw Ethereum transaction with
// lib-net's rules (getSenderAddress: lib-net shardus_net/src/lib.rs
// get_sender_address, shardeum_utils/src/lib.rs), using go-ethereum's RLP,
// Keccak-256 and secp256k1 recovery.
package txsender

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

type accessTuple struct {
	Address     common.Address
	StorageKeys []common.Hash
}

type legacyTx struct {
	Nonce    uint64
	GasPrice *big.Int
	Gas      uint64
	To       *common.Address `rlp:"nil"`
	Value    *big.Int
	Data     []byte
	V, R, S  *big.Int
}

type accessListTx struct {
	ChainID    *big.Int
	Nonce      uint64
	GasPrice   *big.Int
	Gas        uint64
	To         *common.Address `rlp:"nil"`
	Value      *big.Int
	Data       []byte
	AccessList []accessTuple
	V, R, S    *big.Int
}

type dynamicFeeTx struct {
	ChainID    *big.Int
	Nonce      uint64
	GasTipCap  *big.Int
	GasFeeCap  *big.Int
	Gas        uint64
	To         *common.Address `rlp:"nil"`
	Value      *big.Int
	Data       []byte
	AccessList []accessTuple
	V, R, S    *big.Int
}

// Sender recovers the sender of a raw transaction (hex, no 0x) with
// lib-net's rules (shardeum_utils ecrecover, get_base_fee):
//   - legacy transactions (an RLP list), EIP-2930 (0x01) and EIP-1559
//     (0x02); other types are refused, as ethers 2's decoder refuses them;
//   - v: a typed transaction's v is the y parity, 0 or 1; a legacy v of 0
//     or 1 is taken as the parity, 27 or 28 as unprotected (sighash without
//     chain id), and v >= 35 as EIP-155 with chain id (v-35)/2; anything
//     else is refused;
//   - the low-s rule (EIP-2): s above secp256k1n/2 is refused, as are r or
//     s of zero or not below n;
//   - gasValid: the gas limit is at least 21000 + 4 per zero data byte + 16
//     per other data byte, + 32000 when the recipient is the zero address.
//     A creation transaction (no recipient) gets no 32000: lib-net matches
//     the zero address, not an empty recipient, and so does this.
func Sender(rawHex string) (common.Address, bool, error) {
	var zero common.Address
	raw, err := hex.DecodeString(rawHex)
	if err != nil {
		return zero, false, fmt.Errorf("not hex: %w", err)
	}
	if len(raw) == 0 {
		return zero, false, errors.New("empty transaction")
	}
	var (
		sighash []byte
		v, r, s *big.Int
		gas     uint64
		to      *common.Address
		data    []byte
	)
	switch {
	case raw[0] >= 0xc0: // legacy: an RLP list
		var tx legacyTx
		if err := rlp.DecodeBytes(raw, &tx); err != nil {
			return zero, false, fmt.Errorf("legacy transaction: %w", err)
		}
		gas, to, data, r, s = tx.Gas, tx.To, tx.Data, tx.R, tx.S
		fields := []any{tx.Nonce, tx.GasPrice, tx.Gas, tx.To, tx.Value, tx.Data}
		switch {
		case tx.V.IsUint64() && tx.V.Uint64() <= 1:
			v = tx.V
		case tx.V.IsUint64() && (tx.V.Uint64() == 27 || tx.V.Uint64() == 28):
			v = new(big.Int).Sub(tx.V, big.NewInt(27))
		case tx.V.Cmp(big.NewInt(35)) >= 0:
			chain := new(big.Int).Rsh(new(big.Int).Sub(tx.V, big.NewInt(35)), 1)
			v = new(big.Int).Sub(tx.V, new(big.Int).Add(new(big.Int).Lsh(chain, 1), big.NewInt(35)))
			fields = append(fields, chain, uint(0), uint(0))
		default:
			return zero, false, fmt.Errorf("invalid recovery id: v = %s", tx.V)
		}
		enc, err := rlp.EncodeToBytes(fields)
		if err != nil {
			return zero, false, err
		}
		sighash = crypto.Keccak256(enc)
	case raw[0] == 1:
		var tx accessListTx
		if err := rlp.DecodeBytes(raw[1:], &tx); err != nil {
			return zero, false, fmt.Errorf("EIP-2930 transaction: %w", err)
		}
		gas, to, data, v, r, s = tx.Gas, tx.To, tx.Data, tx.V, tx.R, tx.S
		enc, err := rlp.EncodeToBytes([]any{tx.ChainID, tx.Nonce, tx.GasPrice, tx.Gas, tx.To, tx.Value, tx.Data, tx.AccessList})
		if err != nil {
			return zero, false, err
		}
		sighash = crypto.Keccak256([]byte{1}, enc)
	case raw[0] == 2:
		var tx dynamicFeeTx
		if err := rlp.DecodeBytes(raw[1:], &tx); err != nil {
			return zero, false, fmt.Errorf("EIP-1559 transaction: %w", err)
		}
		gas, to, data, v, r, s = tx.Gas, tx.To, tx.Data, tx.V, tx.R, tx.S
		enc, err := rlp.EncodeToBytes([]any{tx.ChainID, tx.Nonce, tx.GasTipCap, tx.GasFeeCap, tx.Gas, tx.To, tx.Value, tx.Data, tx.AccessList})
		if err != nil {
			return zero, false, err
		}
		sighash = crypto.Keccak256([]byte{2}, enc)
	default:
		return zero, false, fmt.Errorf("invalid tx type %#x", raw[0])
	}
	if !v.IsUint64() || v.Uint64() > 1 {
		return zero, false, fmt.Errorf("invalid recovery id: y parity %s", v)
	}
	if !crypto.ValidateSignatureValues(byte(v.Uint64()), r, s, true) {
		return zero, false, errors.New("invalid signature: r or s out of range, or s above secp256k1n/2")
	}
	sig := make([]byte, 65)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:64])
	sig[64] = byte(v.Uint64())
	pub, err := crypto.Ecrecover(sighash, sig)
	if err != nil {
		return zero, false, fmt.Errorf("recover: %w", err)
	}
	var a common.Address
	copy(a[:], crypto.Keccak256(pub[1:])[12:])
	return a, gas >= intrinsicGas(to, data), nil
}

// intrinsicGas is lib-net's get_base_fee.
func intrinsicGas(to *common.Address, data []byte) uint64 {
	g := uint64(21000)
	for _, b := range data {
		if b == 0 {
			g += 4
		} else {
			g += 16
		}
	}
	if to != nil && *to == (common.Address{}) {
		g += 32000
	}
	return g
}
