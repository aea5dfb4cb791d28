package membership

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// fieldModulus is the BN254 scalar field modulus, the contract's Q: an id
// commitment must lie in (0, Q).
var fieldModulus, _ = new(big.Int).SetString("21888242871839275222246405745257275088548364400416034343698204186575808495617", 10)

// RegisterOptions tunes Register.
type RegisterOptions struct {
	// Approve makes Register send approve(contract, deposit) from the same
	// account first when the token allowance does not cover the deposit,
	// and wait for it to be mined. This approval step is courier's
	// addition: nwaku's register sends no approval (its tests approve the
	// token beforehand), so without Approve a short allowance fails with
	// ErrAllowance before any transaction is sent.
	Approve bool
}

// Registration is a membership Register created.
type Registration struct {
	// IDCommitment is the registered id commitment, little-endian.
	IDCommitment [32]byte
	// Index is the membership's leaf in the tree (the event's index).
	Index uint32
	// RateLimit is the membership's user message limit (messages per
	// epoch), from the MembershipRegistered event.
	RateLimit uint32
	// TxHash is the register transaction.
	TxHash common.Hash
	// Block is the number of the block the transaction is in.
	Block uint64
	// Token is the ERC-20 token of the deposit, as the contract's price
	// calculator names it.
	Token common.Address
	// Deposit is the amount taken, in the token's smallest unit.
	Deposit *big.Int
	// ApproveTxHash is the approval step's transaction, zero when none was
	// sent.
	ApproveTxHash common.Hash
}

// Register registers idCommitment (32 bytes little-endian, as the
// keystore holds it) with userMessageLimit messages per epoch, as nwaku's
// OnchainGroupManager.register: register(idCommitment, userMessageLimit,
// []) from the account of Config.PrivateKey, then the membership index from
// the receipt's MembershipRegistered event. Before sending it checks what
// the contract would refuse, so that the error is clear and no gas is
// spent: the commitment (ErrInvalidCommitment, ErrAlreadyRegistered), the
// limit (ErrRateLimit) and the deposit (ErrBalance, ErrAllowance; see
// RegisterOptions.Approve). A mined transaction that failed returns
// ErrTxFailed. Register waits for each transaction's receipt until ctx
// ends; registrations from one Client are serialised so that their nonces
// do not collide.
func (c *Client) Register(ctx context.Context, idCommitment [32]byte, userMessageLimit uint32, opts RegisterOptions) (*Registration, error) {
	if c.cfg.PrivateKey == nil {
		return nil, ErrNoPrivateKey
	}
	c.registerMu.Lock()
	defer c.registerMu.Unlock()

	id := fromLE(idCommitment)
	if id.Sign() == 0 || id.Cmp(fieldModulus) >= 0 {
		return nil, ErrInvalidCommitment
	}
	if err := c.checkLimit(ctx, userMessageLimit); err != nil {
		return nil, err
	}
	member, err := c.IsMember(ctx, idCommitment)
	if err != nil {
		return nil, err
	}
	if member {
		return nil, ErrAlreadyRegistered
	}
	reg := &Registration{IDCommitment: idCommitment}
	if reg.Token, reg.Deposit, err = c.deposit(ctx, userMessageLimit); err != nil {
		return nil, err
	}
	if reg.ApproveTxHash, err = c.ensureAllowance(ctx, reg.Token, reg.Deposit, opts); err != nil {
		return nil, err
	}

	receipt, err := c.transact(ctx, c.cfg.Contract, &membershipABI, "register", id, userMessageLimit, []*big.Int{})
	if err != nil {
		return nil, err
	}
	reg.TxHash, reg.Block = receipt.TxHash, receipt.BlockNumber.Uint64()
	if err := c.parseRegistered(receipt, id, reg); err != nil {
		return nil, err
	}
	c.cfg.Logger.Info("rln: membership registered", "index", reg.Index, "user_message_limit", reg.RateLimit, "tx", reg.TxHash)
	return reg, nil
}

func (c *Client) checkLimit(ctx context.Context, limit uint32) error {
	lo, err := c.MinMembershipRateLimit(ctx)
	if err != nil {
		return err
	}
	hi, err := c.MaxMembershipRateLimit(ctx)
	if err != nil {
		return err
	}
	if limit < lo || limit > hi {
		return fmt.Errorf("%w: %d not in [%d, %d]", ErrRateLimit, limit, lo, hi)
	}
	return nil
}

// deposit asks the contract's price calculator for the token and amount a
// membership of limit costs.
func (c *Client) deposit(ctx context.Context, limit uint32) (common.Address, *big.Int, error) {
	out, err := c.view(ctx, "priceCalculator")
	if err != nil {
		return common.Address{}, nil, err
	}
	calc, err := one[common.Address](out)
	if err != nil {
		return common.Address{}, nil, fmt.Errorf("priceCalculator: %w", err)
	}
	out, err = c.tokenView(ctx, calc, "calculate", limit)
	if err != nil {
		return common.Address{}, nil, err
	}
	if len(out) == 2 {
		token, ok1 := out[0].(common.Address)
		amount, ok2 := out[1].(*big.Int)
		if ok1 && ok2 {
			return token, amount, nil
		}
	}
	return common.Address{}, nil, fmt.Errorf("calculate: unexpected result: %w", errAnswered)
}

// ensureAllowance checks the account's token balance and allowance for
// the deposit, sending the approval when opts ask for it. It returns the
// approval's transaction hash, zero when none was sent.
func (c *Client) ensureAllowance(ctx context.Context, token common.Address, amount *big.Int, opts RegisterOptions) (common.Hash, error) {
	if amount.Sign() == 0 {
		return common.Hash{}, nil
	}
	from := crypto.PubkeyToAddress(c.cfg.PrivateKey.PublicKey)
	out, err := c.tokenView(ctx, token, "balanceOf", from)
	if err != nil {
		return common.Hash{}, err
	}
	balance, err := one[*big.Int](out)
	if err != nil {
		return common.Hash{}, fmt.Errorf("balanceOf: %w", err)
	}
	if balance.Cmp(amount) < 0 {
		return common.Hash{}, fmt.Errorf("%w: %s holds %s of token %s, the deposit is %s", ErrBalance, from, balance, token, amount)
	}
	out, err = c.tokenView(ctx, token, "allowance", from, c.cfg.Contract)
	if err != nil {
		return common.Hash{}, err
	}
	allowance, err := one[*big.Int](out)
	if err != nil {
		return common.Hash{}, fmt.Errorf("allowance: %w", err)
	}
	if allowance.Cmp(amount) >= 0 {
		return common.Hash{}, nil
	}
	if !opts.Approve {
		return common.Hash{}, fmt.Errorf("%w: %s allows the contract %s of token %s, the deposit is %s (approve it, or ask for the approval step)",
			ErrAllowance, from, allowance, token, amount)
	}
	receipt, err := c.transact(ctx, token, &tokenABI, "approve", c.cfg.Contract, amount)
	if err != nil {
		return common.Hash{}, err
	}
	c.cfg.Logger.Info("rln: token deposit approved", "token", token, "amount", amount, "tx", receipt.TxHash)
	return receipt.TxHash, nil
}

// tokenView runs a view call of the price calculator or token at addr.
func (c *Client) tokenView(ctx context.Context, addr common.Address, method string, args ...any) ([]any, error) {
	var out []any
	err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		bc := bind.NewBoundContract(addr, tokenABI, b, b, b)
		out = nil
		if err := bc.Call(&bind.CallOpts{Context: ctx}, &out, method, args...); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	})
	return out, err
}

// transact signs method(args) to the contract at addr, sends it and waits
// for its receipt, which must have status 1. The transaction is signed
// once, so that sending it again after a failover cannot duplicate it.
func (c *Client) transact(ctx context.Context, addr common.Address, a *abi.ABI, method string, args ...any) (*types.Receipt, error) {
	signer := bind.NewKeyedTransactor(c.cfg.PrivateKey, c.ChainID())
	var tx *types.Transaction
	err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		opts := *signer
		opts.Context, opts.NoSend = ctx, true
		var err error
		tx, err = bind.NewBoundContract(addr, *a, b, b, b).Transact(&opts, method, args...)
		return err
	})
	if err != nil {
		if reason := revertReason(err); reason != "" {
			return nil, fmt.Errorf("%s: the contract refuses: %s: %w", method, reason, err)
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	err = c.pool.do(ctx, func(ctx context.Context, b Backend) error {
		err := b.SendTransaction(ctx, tx)
		if err != nil && strings.Contains(err.Error(), "already known") { // resent after a failover
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: send: %w", method, err)
	}
	c.cfg.Logger.Info("rln: transaction sent", "method", method, "tx", tx.Hash())
	receipt, err := c.waitMined(ctx, tx.Hash())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if receipt.Status != types.ReceiptStatusSuccessful {
		return nil, fmt.Errorf("%w: %s transaction %s in block %s has status 0", ErrTxFailed, method, tx.Hash(), receipt.BlockNumber)
	}
	return receipt, nil
}

// waitMined asks for txHash's receipt every ReceiptPollInterval until it
// comes or ctx ends, riding out endpoint outages.
func (c *Client) waitMined(ctx context.Context, txHash common.Hash) (*types.Receipt, error) {
	t := time.NewTicker(c.cfg.ReceiptPollInterval)
	defer t.Stop()
	for {
		var r *types.Receipt
		err := c.pool.do(ctx, func(ctx context.Context, b Backend) error {
			var err error
			r, err = b.TransactionReceipt(ctx, txHash)
			return err
		})
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, ethereum.NotFound), errors.Is(err, ErrUnavailable):
		default:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for transaction %s: %w", txHash, ctx.Err())
		case <-t.C:
		}
	}
}

// parseRegistered finds the contract's MembershipRegistered event for id
// in receipt and fills reg's index and rate limit.
func (c *Client) parseRegistered(receipt *types.Receipt, id *big.Int, reg *Registration) error {
	ev := membershipABI.Events["MembershipRegistered"]
	for _, l := range receipt.Logs {
		if l.Address != c.cfg.Contract || len(l.Topics) == 0 || l.Topics[0] != ev.ID {
			continue
		}
		vals, err := ev.Inputs.Unpack(l.Data)
		if err != nil || len(vals) != 3 {
			continue
		}
		got, ok1 := vals[0].(*big.Int)
		limit, ok2 := vals[1].(*big.Int)
		index, ok3 := vals[2].(uint32)
		if !ok1 || !ok2 || !ok3 || got.Cmp(id) != 0 || !limit.IsUint64() || limit.Uint64() > 1<<32-1 {
			continue
		}
		reg.Index, reg.RateLimit = index, uint32(limit.Uint64())
		return nil
	}
	return fmt.Errorf("%w: no MembershipRegistered event in transaction %s", ErrTxFailed, receipt.TxHash)
}
